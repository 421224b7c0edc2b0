package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snodo/snodo"
)

// openOutputs prepares where a command's output goes: the file of
// --output-file, and the directory of --save (created if missing).
func (a *app) openOutputs(cmd *cobra.Command) error {
	if a.saveDir != "" {
		if err := os.MkdirAll(a.saveDir, 0o755); err != nil {
			return usageErr("--save %s: %v", a.saveDir, errors.Unwrap(err))
		}
		fi, err := os.Stat(a.saveDir)
		if err != nil || !fi.IsDir() {
			return usageErr("--save %s is not a directory", a.saveDir)
		}
	}
	return a.openResultFile(cmd)
}

// saveFlag adds --save DIR to a command whose result can hold images,
// audio or blobs.
func (a *app) saveFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.saveDir, "save", "", "write each image, audio and blob of the result, decoded, and each MCP Apps HTML app (ui://), to a new file in `DIR`; the output gives its path instead of the content")
}

// savedKey is the member that replaces the base64 of a saved block in the
// output: the path of its file.
const savedKey = "savedTo"

// savedPath is the path a block was saved to, if it was.
func savedPath(extra map[string]json.RawMessage) string {
	var p string
	if raw, ok := extra[savedKey]; ok && json.Unmarshal(raw, &p) == nil {
		return p
	}
	return ""
}

// saveContent writes the images, audio and blobs of a tool result, a
// resource read or a prompt to --save's directory, each to a new file
// with a name snodo-run makes up (never one the server gives), and puts
// the file's path in place of the base64.
func (a *app) saveContent(v any) error {
	if a.saveDir == "" {
		return nil
	}
	var s *saver
	switch v := v.(type) {
	case *snodo.CallToolResult:
		s = a.newSaver()
		for i := range v.Content {
			s.content(&v.Content[i])
		}
	case *snodo.ReadResourceResult:
		s = a.newSaver()
		for _, c := range v.Contents {
			s.resource(c)
		}
	case *snodo.GetPromptResult:
		s = a.newSaver()
		for i := range v.Messages {
			s.content(&v.Messages[i].Content)
		}
	default:
		return nil
	}
	return s.close()
}

type saver struct {
	a    *app
	root *os.Root
	err  error
	next map[string]int // the next number to try, by kind
}

func (a *app) newSaver() *saver {
	s := &saver{a: a, next: map[string]int{}}
	s.root, s.err = os.OpenRoot(a.saveDir)
	if s.err != nil {
		s.err = usageErr("--save %s: %v", a.saveDir, errors.Unwrap(s.err))
	}
	return s
}

func (s *saver) close() error {
	if s.root != nil {
		_ = s.root.Close()
	}
	return s.err
}

func (s *saver) content(c *snodo.Content) {
	switch c.Type {
	case "image", "audio":
		if path, ok := s.save(c.Type, c.MIMEType, c.Data); ok {
			c.Data = ""
			c.Extra = withSaved(c.Extra, path)
		}
	case "resource":
		if c.Resource != nil {
			s.resource(c.Resource)
		}
	}
}

func (s *saver) resource(r *snodo.ResourceContents) {
	if r == nil {
		return
	}
	mimeType := r.MIMEType
	kind := "blob"
	if isUIResource(r) {
		// An MCP Apps app: its HTML, text or blob, goes to a file of its
		// own, app-STEM-N.html, whatever MIME type the server gives.
		kind, mimeType = appFileKind(r.URI), "text/html"
		if r.Text != nil {
			if path, ok := s.write(kind, ".html", []byte(*r.Text)); ok {
				r.Text = nil
				r.Extra = withSaved(r.Extra, path)
			}
			return
		}
	}
	if r.Text != nil || r.Blob == "" {
		return
	}
	if path, ok := s.save(kind, mimeType, r.Blob); ok {
		r.Blob = ""
		r.Extra = withSaved(r.Extra, path)
	}
}

func withSaved(extra map[string]json.RawMessage, path string) map[string]json.RawMessage {
	if extra == nil {
		extra = map[string]json.RawMessage{}
	}
	extra[savedKey], _ = json.Marshal(path)
	return extra
}

// save decodes data and writes it to a new file KIND-N.EXT in the
// directory (see write), EXT from the MIME type. It reports false, and
// leaves the block as it is, when the data is not base64 (with a warning)
// or when an earlier block failed.
func (s *saver) save(kind, mimeType, data string) (string, bool) {
	if s.err != nil || data == "" {
		return "", false
	}
	b, err := decodeBase64(data)
	if err != nil {
		s.a.logger.Warn("--save: not base64, left in the output", "kind", kind, "mimeType", mimeType, "err", err)
		return "", false
	}
	return s.write(kind, extensionFor(mimeType), b)
}

// write writes b to a new file KIND-N.EXT in the directory: N the first
// number whose file does not exist yet (a file is never replaced, and a
// symlink never followed; the directory is an os.Root, so no name leaves
// it). KIND and EXT are snodo-run's own (extensionFor, appFileKind), never
// what a server gives. It reports false when an earlier block failed.
func (s *saver) write(kind, ext string, b []byte) (string, bool) {
	if s.err != nil {
		return "", false
	}
	for n := s.next[kind] + 1; n < s.next[kind]+100000; n++ {
		name := kind + "-" + strconv.Itoa(n) + ext
		f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			s.err = usageErr("--save %s: %v", s.a.saveDir, err)
			return "", false
		}
		s.next[kind] = n
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			s.err = usageErr("--save %s: %v", filepath.Join(s.a.saveDir, name), err)
			return "", false
		}
		return filepath.Join(s.a.saveDir, name), true
	}
	s.err = usageErr("--save %s: no free file name for %s", s.a.saveDir, kind)
	return "", false
}

// decodeBase64 decodes standard base64, padded or not; line breaks are
// ignored.
func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b2, err2 := base64.RawStdEncoding.DecodeString(s); err2 == nil {
			return b2, nil
		}
		return nil, fmt.Errorf("%v", err)
	}
	return b, nil
}

// extensions are the file extensions of the MIME types MCP content has
// most often, fixed here rather than taken from the system's MIME tables.
var extensions = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
	"image/svg+xml": ".svg", "image/bmp": ".bmp", "image/tiff": ".tiff", "image/avif": ".avif",
	"image/x-icon": ".ico", "image/vnd.microsoft.icon": ".ico",
	"audio/wav": ".wav", "audio/x-wav": ".wav", "audio/wave": ".wav", "audio/mpeg": ".mp3",
	"audio/mp3": ".mp3", "audio/ogg": ".ogg", "audio/opus": ".opus", "audio/flac": ".flac",
	"audio/aac": ".aac", "audio/mp4": ".m4a", "audio/webm": ".weba",
	"application/pdf": ".pdf", "application/json": ".json", "application/zip": ".zip",
	"application/gzip": ".gz", "application/x-gzip": ".gz", "application/wasm": ".wasm",
	"application/octet-stream": ".bin", "text/plain": ".txt", "text/html": ".html",
	"text/csv": ".csv", "text/markdown": ".md",
}

var safeExtension = regexp.MustCompile(`^\.[a-z0-9]{1,10}$`)

// extensionFor is the file extension of a MIME type; .bin when it is
// unknown. What a server says is only looked up, never used as a name.
func extensionFor(mimeType string) string {
	mt, _, err := mime.ParseMediaType(mimeType)
	if err != nil {
		return ".bin"
	}
	if ext, ok := extensions[mt]; ok {
		return ext
	}
	if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 && safeExtension.MatchString(exts[0]) {
		return exts[0]
	}
	return ".bin"
}
