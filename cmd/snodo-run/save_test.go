package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/snodo/snodo"
)

// --output-file FILE gets what stdout would have, in the chosen format,
// replaced whole; FILE is left as it was when nothing is printed.
func TestOutputFileGetsTheResult(t *testing.T) {
	server := []string{"--", demo}
	dir := t.TempDir()
	out := filepath.Join(dir, "result.txt")
	if err := os.WriteFile(out, []byte("old content, longer than the new one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := ok(t, cli(t, append([]string{"resources", "read", "demo://readme", "-o", "text", "--output-file", out}, server...)...))
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing: the result goes to the file", r.stdout)
	}
	got, _ := os.ReadFile(out)
	if !strings.HasPrefix(string(got), "--- demo://readme\nThis server asks") || strings.Contains(string(got), "old content") {
		t.Errorf("file holds %q, want the text output alone", got)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the replaced file's 0600", fi.Mode().Perm())
	}

	// A tool result with isError is a result: written, and exit 1.
	r = cli(t, append([]string{"tools", "call", "fail", "--arg", "message=broken", "--output-file", out}, server...)...)
	exits(t, r, exitServer, "tool")
	if got, _ := os.ReadFile(out); !strings.Contains(string(got), `"isError":true`) {
		t.Errorf("file holds %q, want the isError result", got)
	}

	// No result: the file is left as it was, no temporary file behind.
	before, _ := os.ReadFile(out)
	exits(t, cli(t, append([]string{"tools", "call", "no_such_tool", "--no-validate", "--output-file", out}, server...)...), exitServer, "server")
	if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
		t.Errorf("file changed by a run that printed nothing: %q", after)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the directory, want the file alone: %v", len(entries), entries)
	}

	// A new file, through a symlink: the link's target is written.
	target := filepath.Join(dir, "target.json")
	link := filepath.Join(dir, "link.json")
	os.Symlink(target, link)
	ok(t, cli(t, append([]string{"version", "--output-file", link}, server...)...))
	if got, _ := os.ReadFile(target); !strings.Contains(string(got), `"handlerABI"`) {
		t.Errorf("symlink target holds %q, want the version", got)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v %v", fi, err)
	}

	// listen's events go to the file too.
	events := filepath.Join(dir, "events.jsonl")
	ok(t, cli(t, "listen", "--tools", "--count", "2", "--output-file", events, "--", demo, "--churn", "100ms"))
	if got, _ := os.ReadFile(events); strings.Count(string(got), "notifications/tools/list_changed") != 2 {
		t.Errorf("events file holds %q, want 2 events", got)
	}

	e := exits(t, cli(t, append([]string{"discover", "--output-file", dir}, server...)...), exitUsage, "usage")
	contains(t, "error", e.Message, "--output-file "+dir+" is a directory")
	e = exits(t, cli(t, append([]string{"discover", "--output-file", filepath.Join(dir, "no", "such", "dir", "x.json")}, server...)...), exitUsage, "usage")
	contains(t, "error", e.Message, "cannot be written", "no such file or directory")
	e = exits(t, cli(t, append([]string{"discover", "--output-file", "/dev/null"}, server...)...), exitUsage, "usage")
	contains(t, "error", e.Message, "not a regular file")
}

var savedName = regexp.MustCompile(`^(image|audio|blob)-[0-9]+\.[a-z0-9]+$`)

// --save DIR writes images and blobs raw, and the output gives their paths.
func TestSaveWritesImagesAndBlobs(t *testing.T) {
	srv := everything(t)
	plain := ok(t, cli(t, "tools", "call", "get-tiny-image", "--", srv))
	var res snodo.CallToolResult
	if err := json.Unmarshal([]byte(plain.stdout), &res); err != nil || len(res.Content) < 2 {
		t.Fatalf("get-tiny-image result %s: %v", plain.stdout, err)
	}
	png, err := base64.StdEncoding.DecodeString(res.Content[1].Data)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	// A file of that name exists, and a symlink to a file outside: neither
	// is written.
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(filepath.Join(dir, "image-1.png"), []byte("mine"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "image-2.png"))

	r := ok(t, cli(t, "tools", "call", "get-tiny-image", "--save", dir, "--", srv))
	want := filepath.Join(dir, "image-3.png")
	contains(t, "output", r.stdout, `"type":"image"`, `"savedTo":"`+want+`"`)
	if strings.Contains(r.stdout, `"data"`) {
		t.Errorf("base64 still in the output: %s", r.stdout)
	}
	if got, _ := os.ReadFile(want); !bytes.Equal(got, png) {
		t.Errorf("%s holds %d bytes, want the image's %d", want, len(got), len(png))
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "image-1.png")); string(got) != "mine" {
		t.Errorf("an existing file was replaced")
	}
	if _, err := os.Lstat(outside); err == nil {
		t.Errorf("a symlink in the directory was followed")
	}

	r = ok(t, cli(t, "tools", "call", "get-tiny-image", "--save", dir, "-o", "text", "--", srv))
	contains(t, "text output", r.stdout, "[image image/png, saved to "+filepath.Join(dir, "image-4.png")+"]")

	// Blob resources: read, embedded in a tool result, in a prompt; the
	// directory is made when missing.
	blobs := filepath.Join(t.TempDir(), "new", "blobs")
	r = ok(t, cli(t, "resources", "read", "demo://resource/dynamic/blob/1", "--save", blobs, "-o", "text", "--", srv))
	contains(t, "resources read", r.stdout, "--- demo://resource/dynamic/blob/1 [text/plain, saved to "+filepath.Join(blobs, "blob-1.txt")+"]")
	ok(t, cli(t, "tools", "call", "get-resource-reference", "--arg", "resourceType=Blob", "--save", blobs, "--", srv))
	r = ok(t, cli(t, "prompts", "get", "resource-prompt", "--arg", "resourceType=Blob", "--arg", "resourceId=1", "--save", blobs, "--", srv))
	contains(t, "prompts get", r.stdout, `"savedTo":"`+filepath.Join(blobs, "blob-3.txt")+`"`)
	for _, n := range []string{"blob-1.txt", "blob-2.txt", "blob-3.txt"} {
		// The server makes the blob's text at each read, with the time.
		if got, _ := os.ReadFile(filepath.Join(blobs, n)); !strings.HasPrefix(string(got), "Resource 1: This is a base64 blob") {
			t.Errorf("%s holds %q, want the decoded blob", n, got)
		}
	}

	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	e := exits(t, cli(t, "tools", "call", "get-tiny-image", "--save", f, "--", srv), exitUsage, "usage")
	contains(t, "error", e.Message, "--save "+f)
}

// What a server names or types a block is never a path: hostile names,
// URIs and MIME types cannot put a file outside DIR.
func TestSaveIgnoresServerNames(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "save")
	os.Mkdir(dir, 0o755)
	a := &app{saveDir: dir, logger: slog.New(slog.DiscardHandler)}
	data := base64.StdEncoding.EncodeToString([]byte("payload"))
	evil := "../../etc/x"
	extra := map[string]json.RawMessage{"name": json.RawMessage(`"../../etc/x"`), "filename": json.RawMessage(`"/tmp/x"`)}
	res := &snodo.CallToolResult{Content: []snodo.Content{
		{Type: "image", MIMEType: "image/../../../x", Name: evil, URI: "file:///" + evil, Data: data, Extra: extra},
		{Type: "audio", MIMEType: `audio/wav; name="../../x"`, Data: data},
		{Type: "resource", Resource: &snodo.ResourceContents{URI: evil, MIMEType: "../../x/y", Blob: data}},
		{Type: "resource", Resource: &snodo.ResourceContents{URI: "/etc/passwd", MIMEType: "application/x-evil/../..", Blob: data}},
		{Type: "image", MIMEType: "image/png", Data: "not base64!"},
	}}
	if err := a.saveContent(res); err != nil {
		t.Fatal(err)
	}
	var saved []string
	filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			saved = append(saved, p)
		}
		return nil
	})
	if len(saved) != 4 {
		t.Errorf("files written %v, want 4", saved)
	}
	for _, p := range saved {
		if filepath.Dir(p) != dir || !savedName.MatchString(filepath.Base(p)) {
			t.Errorf("file %s is not a generated name in %s", p, dir)
		}
		if got, _ := os.ReadFile(p); string(got) != "payload" {
			t.Errorf("%s holds %q", p, got)
		}
	}
	for i, c := range res.Content[:4] {
		p := savedPath(c.Extra)
		if c.Resource != nil {
			p = savedPath(c.Resource.Extra)
		}
		if p == "" || filepath.Dir(p) != dir || c.Data != "" || (c.Resource != nil && c.Resource.Blob != "") {
			t.Errorf("block %d: saved to %q, data left %q", i, p, c.Data)
		}
	}
	if got := filepath.Base(savedPath(res.Content[1].Extra)); got != "audio-1.wav" {
		t.Errorf("audio saved as %s, want audio-1.wav", got)
	}
	if res.Content[4].Data != "not base64!" || savedPath(res.Content[4].Extra) != "" {
		t.Errorf("a block that is not base64 was changed: %+v", res.Content[4])
	}
}

func TestExtensionFromMIMEType(t *testing.T) {
	for mt, want := range map[string]string{
		"image/png": ".png", "image/jpeg": ".jpg", "audio/wav": ".wav", "audio/mpeg": ".mp3",
		"text/plain; charset=utf-8": ".txt", "IMAGE/PNG": ".png", "": ".bin",
		"application/x-unknown-thing": ".bin", "../../etc/passwd": ".bin", "image/png/../../x": ".bin",
	} {
		if got := extensionFor(mt); got != want {
			t.Errorf("extensionFor(%q) = %q, want %q", mt, got, want)
		}
	}
}
