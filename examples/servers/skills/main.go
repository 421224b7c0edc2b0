// Command skills is an example MCP server of the skills extension
// (io.modelcontextprotocol/skills) over stdio: it serves the Agent Skills
// of a directory — every directory holding a SKILL.md is a skill, named by
// its frontmatter, whose path is the directory's — as skill:// resources,
// with skills/list, skills/get, resources/list, resources/read and
// resources/directory/read, in the legacy era (initialize) and the
// 2026-07-28 era (server/discover).
//
//	skills [--dir DIR] [--era legacy|modern|auto]
//
// Without --dir it serves the skills embedded beside this file.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"mime"
	"os"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed skills
var embedded embed.FS

const extensionID = "io.modelcontextprotocol/skills"

type file struct {
	rel  string // path inside the skill
	data []byte
}

type skill struct {
	path        string // acme/billing/refunds
	frontmatter map[string]any
	files       []file // SKILL.md first, then every other file under the directory
}

func (s *skill) uri() string { return "skill://" + s.path + "/SKILL.md" }

func (s *skill) entry() map[string]any {
	res := make([]map[string]any, 0, len(s.files))
	for _, f := range s.files {
		sum := sha256.Sum256(f.data)
		res = append(res, map[string]any{"uri": "skill://" + s.path + "/" + f.rel,
			"digest": "sha256:" + hex.EncodeToString(sum[:]), "size": len(f.data)})
	}
	return map[string]any{"uri": s.uri(), "frontmatter": s.frontmatter, "resources": res}
}

func main() {
	dir := flag.String("dir", "", "the directory of skills to serve (default: the embedded examples)")
	era := flag.String("era", "auto", "legacy (initialize only), modern (server/discover only) or auto (both)")
	flag.Parse()
	var fsys fs.FS
	if *dir != "" {
		fsys = os.DirFS(*dir)
	} else {
		sub, err := fs.Sub(embedded, "skills")
		if err != nil {
			fatal(err)
		}
		fsys = sub
	}
	skills, err := load(fsys)
	if err != nil {
		fatal(err)
	}
	serve(skills, *era)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "skills:", err)
	os.Exit(1)
}

// load finds the skills of fsys.
func load(fsys fs.FS) ([]*skill, error) {
	var skills []*skill
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Base(p) != "SKILL.md" || p == "SKILL.md" {
			return err
		}
		dir := path.Dir(p)
		md, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		fm, err := frontmatter(md)
		if err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		if fm["name"] != path.Base(dir) {
			return fmt.Errorf("%s: the frontmatter name %v is not the directory's name %q", p, fm["name"], path.Base(dir))
		}
		s := &skill{path: dir, frontmatter: fm, files: []file{{"SKILL.md", md}}}
		err = fs.WalkDir(fsys, dir, func(q string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || q == p {
				return err
			}
			data, err := fs.ReadFile(fsys, q)
			if err != nil {
				return err
			}
			s.files = append(s.files, file{strings.TrimPrefix(q, dir+"/"), data})
			return nil
		})
		if err != nil {
			return err
		}
		skills = append(skills, s)
		return nil
	})
	if err == nil && len(skills) == 0 {
		err = errors.New("no skills (directories holding a SKILL.md) found")
	}
	sort.Slice(skills, func(i, j int) bool { return skills[i].path < skills[j].path })
	return skills, err
}

// frontmatter is the YAML between the first two --- lines of md.
func frontmatter(md []byte) (map[string]any, error) {
	rest, ok := bytes.CutPrefix(md, []byte("---\n"))
	if !ok {
		return nil, errors.New("no --- frontmatter")
	}
	text, _, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		return nil, errors.New("the frontmatter does not end with ---")
	}
	var fm map[string]any
	if err := yaml.Unmarshal(text, &fm); err != nil {
		return nil, err
	}
	if _, ok := fm["description"].(string); !ok {
		return nil, errors.New("the frontmatter has no description")
	}
	return fm, nil
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		URI             string `json:"uri"`
		Cursor          string `json:"cursor"`
	} `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func serve(skills []*skill, era string) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	out := json.NewEncoder(os.Stdout)
	modern := false
	for in.Scan() {
		var req request
		if json.Unmarshal(in.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue // not a request: a notification, or a response
		}
		result, rerr := handle(skills, era, &modern, &req)
		msg := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if rerr != nil {
			msg["error"] = rerr
		} else {
			if modern {
				result["resultType"] = "complete"
			}
			msg["result"] = result
		}
		if err := out.Encode(msg); err != nil {
			fatal(err)
		}
	}
}

func handle(skills []*skill, era string, modern *bool, req *request) (map[string]any, *rpcError) {
	caps := map[string]any{"resources": map[string]any{},
		"extensions": map[string]any{extensionID: map[string]any{"directoryRead": true}}}
	info := map[string]any{"name": "skills-example", "version": "1.0.0"}
	cacheable := func(m map[string]any) map[string]any {
		if *modern {
			m["ttlMs"], m["cacheScope"] = 60000, "public"
		}
		return m
	}
	notFound := &rpcError{Code: -32601, Message: "Method not found: " + req.Method}
	switch req.Method {
	case "initialize":
		if era == "modern" {
			return nil, notFound
		}
		return map[string]any{"protocolVersion": req.Params.ProtocolVersion, "capabilities": caps, "serverInfo": info}, nil
	case "server/discover":
		if era == "legacy" {
			return nil, notFound
		}
		*modern = true
		return cacheable(map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": caps,
			"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": info}}), nil
	case "ping":
		return map[string]any{}, nil
	case "skills/list":
		entries := make([]map[string]any, 0, len(skills))
		for _, s := range skills {
			entries = append(entries, s.entry())
		}
		return cacheable(map[string]any{"skills": entries}), nil
	case "skills/get":
		for _, s := range skills {
			if s.uri() == req.Params.URI {
				return cacheable(map[string]any{"skill": s.entry()}), nil
			}
		}
		return nil, &rpcError{Code: -32602, Message: "No skill is served at " + req.Params.URI}
	case "resources/list":
		var res []map[string]any
		for _, s := range skills {
			for _, f := range s.files {
				res = append(res, resource(s, f))
			}
		}
		return cacheable(map[string]any{"resources": res}), nil
	case "resources/read":
		for _, s := range skills {
			for _, f := range s.files {
				if "skill://"+s.path+"/"+f.rel == req.Params.URI {
					return cacheable(map[string]any{"contents": []any{map[string]any{
						"uri": req.Params.URI, "mimeType": mimeType(f.rel), "text": string(f.data)}}}), nil
				}
			}
		}
		return nil, &rpcError{Code: -32602, Message: "Resource not found: " + req.Params.URI}
	case "resources/directory/read":
		return directory(skills, req.Params.URI)
	}
	return nil, notFound
}

func mimeType(name string) string {
	if strings.HasSuffix(name, ".md") {
		return "text/markdown"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "text/plain"
}

func resource(s *skill, f file) map[string]any {
	r := map[string]any{"uri": "skill://" + s.path + "/" + f.rel, "name": path.Base(f.rel), "mimeType": mimeType(f.rel)}
	if f.rel == "SKILL.md" {
		r["name"], r["description"] = s.frontmatter["name"], s.frontmatter["description"]
	}
	return r
}

// directory lists the direct children of a skill's directory.
func directory(skills []*skill, uri string) (map[string]any, *rpcError) {
	for _, s := range skills {
		root := "skill://" + s.path
		if uri != root && !strings.HasPrefix(uri, root+"/") {
			continue
		}
		prefix := strings.TrimPrefix(uri, root)
		prefix = strings.TrimPrefix(prefix+"/", "/")
		children := map[string]map[string]any{}
		for _, f := range s.files {
			rest, ok := strings.CutPrefix(f.rel, prefix)
			if !ok {
				continue
			}
			if name, _, isDir := strings.Cut(rest, "/"); isDir {
				children[name] = map[string]any{"uri": uri + "/" + name, "name": name, "mimeType": "inode/directory"}
			} else {
				children[name] = resource(s, f)
			}
		}
		if len(children) == 0 {
			break
		}
		names := make([]string, 0, len(children))
		for n := range children {
			names = append(names, n)
		}
		sort.Strings(names)
		res := make([]map[string]any, 0, len(names))
		for _, n := range names {
			res = append(res, children[n])
		}
		return map[string]any{"resources": res}, nil
	}
	return nil, &rpcError{Code: -32602, Message: uri + " is not a directory resource"}
}
