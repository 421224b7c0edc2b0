package wasm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// DefaultMaxModuleBytes is the default of ModuleConfig.MaxModuleBytes.
const DefaultMaxModuleBytes = 64 << 20

// ReadModuleFile reads a module file the one way Snodo reads them: it
// must be a regular file (a FIFO, a device such as /dev/zero or a
// directory is refused at once: the file is opened non-blocking and
// checked with fstat before anything is read) of at most limit bytes
// (DefaultMaxModuleBytes when limit is 0 or less). A bigger file is
// refused before it is read, and a file that grows past limit while it is
// read is refused too.
func ReadModuleFile(path string, limit int64) ([]byte, error) {
	limit = moduleCap(limit)
	// O_NONBLOCK: opening a FIFO without a writer returns at once instead
	// of waiting; a regular file ignores the flag.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, pathError("open", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, pathError("stat", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("module file %s is not a regular file (%s)", SanitizeText(path), fileKind(fi.Mode()))
	}
	if fi.Size() > limit {
		return nil, sizeCapError(path, fi.Size(), limit)
	}
	// Into a buffer of the file's size (and a byte to see growth): a
	// module is megabytes, which io.ReadAll would grow into step by step.
	b, err := readAllSized(io.LimitReader(f, limit+1), fi.Size()+1)
	if err != nil {
		return nil, pathError("read", path, err)
	}
	if int64(len(b)) > limit {
		return nil, sizeCapError(path, int64(len(b)), limit)
	}
	return b, nil
}

// readAllSized is io.ReadAll starting with a buffer of size bytes.
func readAllSized(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func moduleCap(limit int64) int64 {
	if limit <= 0 {
		return DefaultMaxModuleBytes
	}
	return limit
}

func sizeCapError(path string, size, limit int64) error {
	what := "module"
	if path != "" {
		what = "module file " + SanitizeText(path)
	}
	return fmt.Errorf("%s is %d bytes, over the module size cap of %s (MaxModuleBytes)", what, size, sizeString(limit))
}

// pathError is err with path escaped for logs and terminals (a path can
// hold anything), still matching errors.Is(err, fs.ErrNotExist) and such.
func pathError(op, path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &os.PathError{Op: op, Path: SanitizeText(path), Err: err}
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}
