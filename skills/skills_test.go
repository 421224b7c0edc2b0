package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/internal/skillserver"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/skills"
	"github.com/snodo/snodo/transport/stdio"
)

func TestMain(m *testing.M) {
	fakeserver.Main(map[string]fakeserver.Scenario{"skills": skillserver.Serve})
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// connect starts the scripted skills server with args and connects to it;
// the connection is closed when the test ends.
func connect(t *testing.T, args ...string) *snodo.Client {
	t.Helper()
	return connectWith(t, 0, args...)
}

// connectWith is connect with the longest line accepted from the server
// (0: the default, 16 MiB).
func connectWith(t *testing.T, maxLine int, args ...string) *snodo.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The process lives as long as the connection, not as ctx.
	conn, err := stdio.Connect(context.Background(), stdio.Config{Command: fakeserver.Executable(), Args: args,
		Env: []stdio.EnvVar{{Name: fakeserver.ScenarioEnv, Value: "skills"}}, MaxLineBytes: maxLine})
	if err != nil {
		t.Fatal(err)
	}
	c, err := snodo.Connect(ctx, conn, &snodo.Options{DefaultTimeout: time.Minute})
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close() // closes the server's stdin: it exits at EOF
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := conn.Wait(ctx); err != nil {
			t.Errorf("the server did not exit: %v", err)
		}
	})
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

var eras = []struct {
	arg string
	era snodo.Era
}{{"legacy", snodo.EraLegacy}, {"modern", snodo.EraModern}}

// The client side of the extension works the same in both eras: every
// page listed, entries typed with unknown members kept, a skill the
// listing omits got by URI, names resolved (and a shared name refused
// with the URIs that share it), files read and verified, directories
// read page by page.
func TestSkillsBothEras(t *testing.T) {
	for _, e := range eras {
		t.Run(e.arg, func(t *testing.T) {
			c := connect(t, e.arg)
			ctx := ctxT(t)
			if c.Server().Era != e.era {
				t.Fatalf("era %v, want %v", c.Server().Era, e.era)
			}
			capa, err := skills.ServerCapability(c)
			if err != nil || !capa.DirectoryRead {
				t.Fatalf("capability %+v, %v", capa, err)
			}
			var got []*skills.Skill
			for s, err := range skills.All(ctx, c) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, s)
			}
			var paths []string
			for _, s := range got {
				paths = append(paths, s.Path())
			}
			if want := "git-workflow acme/billing/refunds acme/support/refunds reports/daily"; strings.Join(paths, " ") != want {
				t.Fatalf("listed %v, want %s (two pages)", paths, want)
			}
			gw := got[0]
			if gw.Name != "git-workflow" || !strings.HasPrefix(gw.Description, "Follow") || len(gw.Files) != 3 || gw.Dynamic {
				t.Errorf("git-workflow entry: %+v", gw)
			}
			if !got[3].Dynamic || got[3].Files != nil {
				t.Errorf("reports/daily is not dynamic: %+v", got[3])
			}
			b, _ := json.Marshal(gw)
			for _, want := range []string{`"x-extra":"kept"`, `"license":"Apache-2.0"`, `"io.example/x":1`, `"digest":"sha256:`} {
				if !strings.Contains(string(b), want) {
					t.Errorf("re-encoded entry lacks %s: %s", want, b)
				}
			}
			if b, _ := json.Marshal(got[3]); !strings.Contains(string(b), `"resources":"dynamic"`) {
				t.Errorf("dynamic entry re-encoded as %s", b)
			}

			// Unlisted, yet served.
			res, err := skills.Get(ctx, c, "skill://hidden/SKILL.md")
			if err != nil || res.Skill.Name != "hidden" {
				t.Fatalf("get hidden: %+v, %v", res, err)
			}
			if _, err := skills.Get(ctx, c, "skill://nope/SKILL.md"); !isServer(err, jsonrpc.CodeInvalidParams) {
				t.Errorf("get of an unknown skill: %v, want the server's -32602", err)
			}

			// Names and paths.
			_, err = skills.Resolve(ctx, c, "refunds")
			if !errors.Is(err, skills.ErrAmbiguous) || !strings.Contains(err.Error(), "skill://acme/billing/refunds/SKILL.md") ||
				!strings.Contains(err.Error(), "skill://acme/support/refunds/SKILL.md") {
				t.Errorf("a shared name: %v, want ErrAmbiguous naming both URIs", err)
			}
			for ref, uri := range map[string]string{
				"acme/support/refunds":           "skill://acme/support/refunds/SKILL.md",
				"git-workflow":                   "skill://git-workflow/SKILL.md",
				"hidden":                         "skill://hidden/SKILL.md",
				"skill://reports/daily/SKILL.md": "skill://reports/daily/SKILL.md",
			} {
				res, err := skills.Resolve(ctx, c, ref)
				if err != nil || res.Skill.URI != uri {
					t.Errorf("resolve %q: %+v, %v; want %s", ref, res, err, uri)
				}
			}
			for _, ref := range []string{"nope", "../x", "a b"} {
				if _, err := skills.Resolve(ctx, c, ref); !errors.Is(err, skills.ErrNotFound) {
					t.Errorf("resolve %q: %v, want ErrNotFound", ref, err)
				}
			}

			// Files, verified.
			md, err := skills.ReadFile(ctx, c, gw, gw.URI)
			if err != nil || !md.Verified || !strings.Contains(string(md.Bytes), "# Git workflow") {
				t.Fatalf("read SKILL.md: %+v, %v", md, err)
			}
			uri, err := skills.FileURI(gw, "references/GUIDE.md")
			if err != nil {
				t.Fatal(err)
			}
			guide, err := skills.ReadFile(ctx, c, gw, uri)
			if err != nil || guide.Text == nil || *guide.Text != "# Guide\n\nRebase, never merge.\n" || guide.Size != int64(len(*guide.Text)) {
				t.Fatalf("read GUIDE.md: %+v, %v", guide, err)
			}
			if _, err := skills.ReadFile(ctx, c, gw, "skill://git-workflow/credit-note.md"); !errors.Is(err, skills.ErrVerification) {
				t.Errorf("an unlisted file: %v, want ErrVerification", err)
			}
			for _, bad := range []string{"../other/SKILL.md", "/etc/passwd", "a//b", ""} {
				if bad == "" {
					continue
				}
				if _, err := skills.FileURI(gw, bad); err == nil {
					t.Errorf("FileURI accepted %q", bad)
				}
			}
			daily, err := skills.ReadFile(ctx, c, got[3], got[3].URI)
			if err != nil || daily.Verified {
				t.Errorf("read a dynamic skill: %+v, %v (want it unverified)", daily, err)
			}

			// Directories.
			var children []string
			for r, err := range skills.Directory(ctx, c, gw.Root()) {
				if err != nil {
					t.Fatal(err)
				}
				children = append(children, r.Name+"="+r.MIMEType)
			}
			if want := "SKILL.md=text/markdown references=inode/directory scripts=inode/directory"; strings.Join(children, " ") != want {
				t.Errorf("directory: %v, want %s", children, want)
			}
			if _, err := skills.ReadDirectory(ctx, c, gw.URI, ""); !isServer(err, jsonrpc.CodeInvalidParams) {
				t.Errorf("directory read of a file: %v, want the server's -32602", err)
			}
		})
	}
}

func isServer(err error, code int64) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) && je.Kind == jsonrpc.KindServer && je.Code == code
}

// A server that does not declare the extension, or directoryRead, is not
// sent what it did not declare: the error is the client's own, saying so.
func TestUndeclaredIsNotCalled(t *testing.T) {
	ctx := ctxT(t)
	c := connect(t, "no-extension")
	if _, err := skills.List(ctx, c, ""); !errors.Is(err, skills.ErrNotDeclared) || !strings.Contains(err.Error(), skills.ExtensionID) {
		t.Errorf("list: %v, want ErrNotDeclared", err)
	}
	if _, err := skills.Get(ctx, c, "skill://git-workflow/SKILL.md"); !errors.Is(err, skills.ErrNotDeclared) {
		t.Errorf("get: %v, want ErrNotDeclared", err)
	}
	c = connect(t, "no-directory-read", "legacy")
	if _, err := skills.List(ctx, c, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := skills.ReadDirectory(ctx, c, "skill://git-workflow", ""); !errors.Is(err, skills.ErrNoDirectoryRead) {
		t.Errorf("directory read: %v, want ErrNoDirectoryRead", err)
	}
}

// Every hostile answer of the scripted server is refused with an error
// that says what is wrong, and none of its content is returned.
func TestHostileAnswers(t *testing.T) {
	ctx := ctxT(t)
	cases := []struct {
		kind  string
		want  error
		words []string
		read  bool   // the error comes from reading git-workflow's SKILL.md
		get   bool   // from getting git-workflow
		era   string // legacy or modern (the default)
	}{
		{kind: "over-limit", want: skills.ErrOverLimit, words: []string{"513 files", "512"}},
		{kind: "over-size", want: skills.ErrOverLimit, words: []string{"16777216 bytes"}},
		{kind: "bad-resources", want: skills.ErrInvalid, words: []string{"resources 7", "dynamic"}},
		{kind: "bad-digest", want: skills.ErrInvalid, words: []string{`"sha256:XYZ"`, "64 lowercase hex"}},
		{kind: "escape", want: skills.ErrInvalid, words: []string{"not inside the skill's directory"}},
		{kind: "name-mismatch", want: skills.ErrInvalid, words: []string{`ends in "git-flow"`, `"git-workflow"`}},
		{kind: "control-name", want: skills.ErrInvalid, words: []string{`\x1b`, `\u202e`, "lowercase letters"}},
		{kind: "cursor-loop", want: skills.ErrInvalid, words: []string{"cursor", "twice"}},
		{kind: "endless", want: skills.ErrOverLimit, words: []string{"past 10000 skills", "5001 pages"}},
		{kind: "not-json", want: skills.ErrInvalid, words: []string{"invalid skills/list result"}, era: "legacy"},
		{kind: "tampered", want: skills.ErrVerification, words: []string{"digest", "skills get skill://git-workflow/SKILL.md"}, read: true},
		{kind: "frontmatter", want: skills.ErrVerification, words: []string{`"allowed-tools"`, "its entry does not"}, read: true},
		{kind: "substitute", want: skills.ErrInvalid, words: []string{"another skill"}, get: true},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			c := connect(t, "hostile="+tc.kind, tc.era)
			var err error
			switch {
			case tc.read, tc.get:
				var res *skills.GetResult
				res, err = skills.Get(ctx, c, "skill://git-workflow/SKILL.md")
				if err == nil {
					if tc.get {
						t.Fatalf("get answered %+v", res.Skill)
					}
					var content *skills.Content
					content, err = skills.ReadFile(ctx, c, res.Skill, res.Skill.URI)
					if content != nil {
						t.Errorf("content returned with the error: %q", content.Bytes)
					}
				}
			default:
				for _, e := range skills.All(ctx, c) {
					if e != nil {
						err = e
					}
				}
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	t.Run("dynamic-huge", func(t *testing.T) {
		// A line limit above the content, so that the read itself is refused.
		c := connectWith(t, 32<<20, "hostile=dynamic-huge")
		res, err := skills.Get(ctx, c, "skill://reports/daily/SKILL.md")
		if err != nil {
			t.Fatal(err)
		}
		content, err := skills.ReadFile(ctx, c, res.Skill, res.Skill.URI)
		if !errors.Is(err, skills.ErrOverLimit) || content != nil || !strings.Contains(err.Error(), "limit of 16777216") {
			t.Errorf("a dynamic file over 16 MiB: %v (content %v), want ErrOverLimit", err, content != nil)
		}
	})
	for _, k := range skillserver.Hostile {
		if k == "control-text" || k == "dynamic-huge" {
			continue // valid: escaped where it is shown (cmd/snodo-run)
		}
		found := false
		for _, tc := range cases {
			found = found || tc.kind == k
		}
		if !found {
			t.Errorf("hostile answer %q has no case", k)
		}
	}
}

// VerifyFrontmatter compares YAML and JSON as values, and a frontmatter
// built to expand (aliases of aliases) is cut off at the node budget
// instead of growing without bound.
func TestVerifyFrontmatter(t *testing.T) {
	s := &skills.Skill{URI: "skill://x/SKILL.md", Frontmatter: json.RawMessage(
		`{"name":"x","description":"d","n":1,"f":1.5,"on":true,"date":"2024-01-02","tags":["a","b"],"metadata":{"k":null}}`)}
	ok := "---\nname: x\ndescription: d\nn: 1\nf: 1.5\non: true\ndate: 2024-01-02\ntags: [a, b]\nmetadata:\n  k: null\n---\nbody\n"
	if err := skills.VerifyFrontmatter(s, []byte(ok)); err != nil {
		t.Errorf("equal frontmatter refused: %v", err)
	}
	for name, md := range map[string]string{
		"value":       strings.Replace(ok, "n: 1", "n: 2", 1),
		"type":        strings.Replace(ok, "n: 1", `n: "1"`, 1),
		"missing":     strings.Replace(ok, "f: 1.5\n", "", 1),
		"added":       strings.Replace(ok, "n: 1\n", "n: 1\nallowed-tools: Bash\n", 1),
		"no block":    "name: x\n",
		"unclosed":    "---\nname: x\n",
		"bad yaml":    "---\nname: [x\n---\n",
		"duplicate":   strings.Replace(ok, "n: 1\n", "n: 1\nn: 1\n", 1),
		"not mapping": "---\n- a\n---\n",
	} {
		if err := skills.VerifyFrontmatter(s, []byte(md)); !errors.Is(err, skills.ErrVerification) {
			t.Errorf("%s: %v, want ErrVerification", name, err)
		}
	}
	var bomb strings.Builder
	bomb.WriteString("---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&bomb, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	bomb.WriteString("---\n")
	err := skills.VerifyFrontmatter(s, []byte(bomb.String()))
	if !errors.Is(err, skills.ErrVerification) || !strings.Contains(err.Error(), "YAML nodes") {
		t.Errorf("alias expansion: %v, want the node budget's error", err)
	}
}

// Validate refuses each way an entry can break the extension, naming it.
func TestValidate(t *testing.T) {
	const d = `"sha256:0000000000000000000000000000000000000000000000000000000000000000"`
	md := `{"uri":"skill://a/x/SKILL.md","digest":` + d + `,"size":1}`
	entry := func(uri, fm, res string) string {
		return `{"uri":"` + uri + `","frontmatter":` + fm + `,"resources":` + res + `}`
	}
	fm := `{"name":"x","description":"d"}`
	good := entry("skill://a/x/SKILL.md", fm, `[`+md+`,{"uri":"skill://a/x/r/y.md","digest":`+d+`,"size":2}]`)
	var s skills.Skill
	if err := json.Unmarshal([]byte(good), &s); err != nil || s.Validate() != nil {
		t.Fatalf("a good entry: %v, %v", err, s.Validate())
	}
	for name, tc := range map[string]struct{ entry, says string }{
		"listed twice":       {entry("skill://a/x/SKILL.md", fm, `[`+md+`,`+md+`]`), "listed twice"},
		"no SKILL.md":        {entry("skill://a/x/SKILL.md", fm, `[{"uri":"skill://a/x/y.md","digest":`+d+`,"size":1}]`), "does not include its SKILL.md"},
		"empty segment":      {entry("skill://a/x/SKILL.md", fm, `[`+md+`,{"uri":"skill://a/x//y","digest":`+d+`,"size":1}]`), "not inside"},
		"dot segment":        {entry("skill://a/x/SKILL.md", fm, `[`+md+`,{"uri":"skill://a/x/./y","digest":`+d+`,"size":1}]`), "not inside"},
		"other skill":        {entry("skill://a/x/SKILL.md", fm, `[`+md+`,{"uri":"skill://a/xy/z","digest":`+d+`,"size":1}]`), "not inside"},
		"negative size":      {entry("skill://a/x/SKILL.md", fm, `[{"uri":"skill://a/x/SKILL.md","digest":`+d+`,"size":-1}]`), "negative"},
		"uppercase digest":   {entry("skill://a/x/SKILL.md", fm, `[{"uri":"skill://a/x/SKILL.md","digest":"sha256:`+strings.Repeat("A", 64)+`","size":1}]`), "64 lowercase hex"},
		"not SKILL.md":       {entry("skill://a/x/README.md", fm, `"dynamic"`), "must be the skill's SKILL.md"},
		"no description":     {entry("skill://a/x/SKILL.md", `{"name":"x"}`, `"dynamic"`), "no description"},
		"name not a string":  {entry("skill://a/x/SKILL.md", `{"name":7,"description":"d"}`, `"dynamic"`), "missing, or not a string"},
		"double hyphen":      {entry("skill://a/x--y/SKILL.md", `{"name":"x--y","description":"d"}`, `"dynamic"`), "single hyphens"},
		"uppercase name":     {entry("skill://a/X/SKILL.md", `{"name":"X","description":"d"}`, `"dynamic"`), "lowercase letters"},
		"long name":          {entry("skill://a/"+strings.Repeat("x", 65)+"/SKILL.md", `{"name":"`+strings.Repeat("x", 65)+`","description":"d"}`, `"dynamic"`), "more than 64"},
		"frontmatter string": {entry("skill://a/x/SKILL.md", `"x"`, `"dynamic"`), "frontmatter must be a JSON object"},
		"relative uri":       {entry("a/x/SKILL.md", fm, `"dynamic"`), "not an absolute URI"},
		"uri with a control": {entry("skill://a/x\\u001b/SKILL.md", fm, `"dynamic"`), `\x1b`},
	} {
		var s skills.Skill
		err := json.Unmarshal([]byte(tc.entry), &s)
		if err == nil {
			err = s.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.says)
		}
	}
	for _, res := range []string{`null`, `7`, `"static"`, `{}`} {
		var s skills.Skill
		if err := json.Unmarshal([]byte(entry("skill://a/x/SKILL.md", fm, res)), &s); err == nil {
			t.Errorf("resources %s decoded", res)
		}
	}
}
