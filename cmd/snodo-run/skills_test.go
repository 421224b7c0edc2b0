package main

import (
	"encoding/json"
	"testing"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/internal/skillserver"
)

func init() { scenarios["skills"] = skillserver.Serve }

// skillsServer is the command line that runs the scripted skills server
// (skillserver) with serverArgs behind snodo-run.
func skillsServer(serverArgs []string, args ...string) []string {
	out := append([]string{"--env", fakeserver.ScenarioEnv + "=skills"}, args...)
	return append(append(out, "--", fakeserver.Executable()), serverArgs...)
}

// skills list, get, read and dir, in both eras and both outputs: every
// page listed, entries with their unknown members, a shared name refused
// with the URIs to choose from (exit 2), an unknown skill the server's
// error (exit 1), a file printed as it is once verified.
func TestSkillsCommands(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			srv := []string{era}
			r := ok(t, cli(t, skillsServer(srv, "skills", "list")...))
			var list struct {
				Skills []map[string]any `json:"skills"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Skills) != 4 {
				t.Fatalf("skills list: %v\n%s", err, r.stdout)
			}
			contains(t, "skills list", r.stdout, `"x-extra":"kept"`, `"resources":"dynamic"`, `"license":"Apache-2.0"`)

			r = ok(t, cli(t, skillsServer(srv, "-o", "text", "skills", "list")...))
			contains(t, "skills list --output text", r.stdout,
				"git-workflow\tskill://git-workflow/SKILL.md\t(3 files, ",
				"refunds\tskill://acme/billing/refunds/SKILL.md\t(1 file, ",
				"refunds\tskill://acme/support/refunds/SKILL.md\t(1 file, ",
				"daily\tskill://reports/daily/SKILL.md\t(dynamic",
				"    Follow the team's Git conventions")

			r = ok(t, cli(t, skillsServer(srv, "-o", "text", "skills", "get", "git-workflow")...))
			contains(t, "skills get --output text", r.stdout, `"license": "Apache-2.0"`, "files:\n  SKILL.md\t", "  references/GUIDE.md\t30\tsha256:")

			r = ok(t, cli(t, skillsServer(srv, "skills", "get", "hidden")...))
			contains(t, "skills get of an unlisted skill", r.stdout, `"skill":{`, `"uri":"skill://hidden/SKILL.md"`)

			e := exits(t, cli(t, skillsServer(srv, "skills", "get", "refunds")...), exitUsage, "usage")
			contains(t, "a shared name", e.Message, "skill://acme/billing/refunds/SKILL.md", "skill://acme/support/refunds/SKILL.md", "path or the URI")
			ok(t, cli(t, skillsServer(srv, "skills", "get", "acme/billing/refunds")...))

			e = exits(t, cli(t, skillsServer(srv, "skills", "get", "nope")...), exitServer, "server")
			contains(t, "an unknown skill", e.Message, `no skill "nope"`, "skill://nope/SKILL.md")

			r = ok(t, cli(t, skillsServer(srv, "-o", "text", "skills", "read", "git-workflow", "references/GUIDE.md")...))
			if r.stdout != "# Guide\n\nRebase, never merge.\n" {
				t.Errorf("skills read --output text printed %q", r.stdout)
			}
			r = ok(t, cli(t, skillsServer(srv, "skills", "read", "skill://git-workflow/SKILL.md")...))
			contains(t, "skills read", r.stdout, `"verified":true`, `"digest":"sha256:`, `"text":"---\ndescription: `)
			e = exits(t, cli(t, skillsServer(srv, "skills", "read", "git-workflow", "../x")...), exitUsage, "usage")
			contains(t, "a path out of the skill", e.Message, "not a path inside the skill")
			exits(t, cli(t, skillsServer(srv, "skills", "read", "git-workflow", "credit-note.md")...), exitConnection, "protocol")

			r = ok(t, cli(t, skillsServer(srv, "-o", "text", "skills", "dir", "git-workflow")...))
			contains(t, "skills dir", r.stdout, "skill://git-workflow/references\treferences (inode/directory)", "skill://git-workflow/SKILL.md\tSKILL.md (text/markdown)")
			r = ok(t, cli(t, skillsServer(srv, "-o", "text", "skills", "dir", "skill://git-workflow", "scripts")...))
			contains(t, "skills dir URI DIR", r.stdout, "skill://git-workflow/scripts/check.sh\tcheck.sh")
		})
	}
}

// A server without the extension is sent nothing and the error says so
// (exit 1); one without directoryRead is sent no resources/directory/read.
func TestSkillsUndeclared(t *testing.T) {
	e := exits(t, cli(t, skillsServer([]string{"no-extension"}, "skills", "list")...), exitServer, "server")
	contains(t, "no extension", e.Message, "does not declare the skills extension (io.modelcontextprotocol/skills)")
	e = exits(t, cli(t, skillsServer([]string{"no-directory-read"}, "skills", "dir", "git-workflow")...), exitServer, "server")
	contains(t, "no directoryRead", e.Message, "resources/directory/read", "does not declare directoryRead")
}

// A server's hostile answers: a description with terminal escapes is
// printed escaped in every output; an entry over the limits, a file that
// does not match its digest, and one whose frontmatter is not the entry's
// are refused with an error that says why, and nothing of them is printed.
func TestSkillsHostile(t *testing.T) {
	for _, output := range []string{"json", "pretty", "text"} {
		r := ok(t, cli(t, skillsServer([]string{"hostile=control-text"}, "-o", output, "skills", "list")...))
		noRaw(t, "skills list -o "+output, r.stdout)
		if output != "text" {
			var list struct {
				Skills []struct {
					Frontmatter struct {
						Description string `json:"description"`
					} `json:"frontmatter"`
				} `json:"skills"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.Skills[0].Frontmatter.Description != skillserver.HostileText {
				t.Errorf("-o %s: the description does not decode to the server's text: %v\n%s", output, err, r.stdout)
			}
		}
	}
	r := cli(t, skillsServer([]string{"hostile=control-name"}, "-o", "text", "skills", "list")...)
	noRaw(t, "stderr", r.stderr)
	e := exits(t, r, exitConnection, "protocol")
	contains(t, "a name with controls", e.Message, "lowercase letters")

	cases := []struct {
		hostile string
		args    []string
		words   []string
	}{
		{"over-limit", []string{"skills", "list"}, []string{"513 files", "limit of 512"}},
		{"over-size", []string{"skills", "list"}, []string{"limit of 16777216 bytes"}},
		{"bad-resources", []string{"skills", "list"}, []string{"resources 7", `"dynamic"`}},
		{"tampered", []string{"-o", "text", "skills", "read", "git-workflow"}, []string{"has digest sha256:", "its entry says", "skills get skill://git-workflow/SKILL.md"}},
		{"frontmatter", []string{"-o", "text", "skills", "read", "git-workflow"}, []string{`"allowed-tools"`, "its entry does not"}},
		{"substitute", []string{"skills", "get", "skill://git-workflow/SKILL.md"}, []string{"another skill"}},
	}
	for _, tc := range cases {
		t.Run(tc.hostile, func(t *testing.T) {
			r := cli(t, skillsServer([]string{"hostile=" + tc.hostile}, tc.args...)...)
			e := exits(t, r, exitConnection, "protocol")
			contains(t, "error", e.Message, tc.words...)
			if r.stdout != "" {
				t.Errorf("printed with the error: %q", r.stdout)
			}
		})
	}
}

// The shell has the skills command: its errors are reported and the
// session goes on.
func TestSkillsShell(t *testing.T) {
	script := "skills list\nskills get refunds\nskills read git-workflow references/GUIDE.md\nskills frob\n"
	r := cliWith(t, runOpts{stdin: script}, skillsServer([]string{"modern"}, "-o", "text", "shell")...)
	if r.code != exitUsage {
		t.Fatalf("exit code %d, want %d (the last failure's)\nstdout: %s\nstderr: %s", r.code, exitUsage, r.stdout, r.stderr)
	}
	contains(t, "shell output", r.stdout, "daily\tskill://reports/daily/SKILL.md", "# Guide\n\nRebase, never merge.\n")
	contains(t, "shell errors", r.stderr, "skill://acme/support/refunds/SKILL.md", `skills wants list, get, read or dir, not \"frob\"`)
}
