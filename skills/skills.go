// Package skills is the client side of the MCP skills extension
// (io.modelcontextprotocol/skills): a server publishes Agent Skills — a
// directory of files with a SKILL.md at its root — as resources, lists
// them with skills/list, describes one with skills/get, and, when it
// declares directoryRead, lists a directory's children with
// resources/directory/read.
//
// The package builds on snodo.Client.Request, in either protocol era.
// Every entry the server sends is checked before it is returned (see
// Skill.Validate): a SKILL.md URI whose last path segment is the skill's
// name, a frontmatter object with a valid name and a description, a
// complete file manifest inside the skill's directory with sha256 digests
// and sizes, within the extension's limits (MaxResources files,
// MaxTotalSize bytes) — or the string "dynamic". ReadFile reads one file
// of a skill with resources/read and verifies it against the entry: a
// file the entry does not list, a size or digest that differs, or a
// SKILL.md whose frontmatter is not the entry's are verification
// failures, and the content is not returned.
//
// A skill is content from the server, not from the user: its text is
// untrusted model input, its digests prove consistency with the entry and
// nothing more, and its frontmatter (allowed-tools and the like) grants
// nothing. The extension defines no notification of its own: a server's
// skills change as its resources do (notifications/resources/list_changed).
package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/jsonrpc"
)

// ExtensionID names the extension in the server's capabilities.extensions.
const ExtensionID = "io.modelcontextprotocol/skills"

// The extension's methods.
const (
	MethodList          = "skills/list"
	MethodGet           = "skills/get"
	MethodDirectoryRead = "resources/directory/read"
)

// The extension's per-skill limits, checked on every entry: a skill that
// lists more files, or more bytes in total, is refused with
// ErrOverLimit before any of its files is read.
const (
	MaxResources = 512
	MaxTotalSize = 16 << 20
)

// MaxListed is the most skills All goes through: a listing whose pages go
// on past it (a server that returns a new cursor forever) ends with an
// ErrOverLimit error.
const MaxListed = 10000

// Dynamic is the value of an entry's resources for a skill whose content
// is generated, so that no digests can be published.
const Dynamic = "dynamic"

// SkillFile is the name of a skill's required root file.
const SkillFile = "SKILL.md"

// DirectoryMIMEType is the mimeType of a directory resource.
const DirectoryMIMEType = "inode/directory"

// Sentinels for errors.Is, each the cause of the *snodo.Error returned.
var (
	// ErrNotDeclared: the server does not declare the extension, so
	// skills/list and skills/get are not sent.
	ErrNotDeclared = errors.New("the server does not declare the skills extension (" + ExtensionID + ")")
	// ErrNoDirectoryRead: the server does not declare directoryRead, so
	// resources/directory/read is not sent.
	ErrNoDirectoryRead = errors.New("the server does not declare directoryRead in the skills extension")
	// ErrInvalid: the server's answer breaks the extension (a malformed
	// entry, a missing member, a wrong type).
	ErrInvalid = errors.New("invalid skills answer")
	// ErrOverLimit: a skill lists more than MaxResources files or
	// MaxTotalSize bytes, a dynamic skill's file is larger than
	// MaxTotalSize, or a listing goes on past MaxListed skills.
	ErrOverLimit = errors.New("over a limit of the skills client")
	// ErrVerification: a file read does not match the skill's entry (not
	// listed, another size or digest, a SKILL.md whose frontmatter is not
	// the entry's); its content is not used.
	ErrVerification = errors.New("skill content does not match its entry")
	// ErrAmbiguous: a skill name matches several entries of the listing.
	ErrAmbiguous = errors.New("the skill name matches several skills")
	// ErrNotFound: no skill has the name or path asked for.
	ErrNotFound = errors.New("no such skill")
)

// failure is the *snodo.Error for a check of this package: of kind
// protocol, with cause as its Go cause.
func failure(cause error, format string, args ...any) *snodo.Error {
	return &snodo.Error{Kind: jsonrpc.KindProtocol, Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf(format, args...), Cause: cause}
}

// File is one file of a skill's manifest: its resource URI, the sha256
// digest ("sha256:" and 64 lowercase hex digits) and the length in bytes
// of its raw content. Unknown members are kept in Extra.
type File struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`

	Extra map[string]json.RawMessage `json:"-"`
}

type fileFields File

// UnmarshalJSON implements json.Unmarshaler, keeping unknown members.
func (f *File) UnmarshalJSON(data []byte) error {
	var v fileFields
	extra, err := decodeKeeping(data, &v, "uri", "digest", "size")
	if err != nil {
		return err
	}
	*f = File(v)
	f.Extra = extra
	return nil
}

// MarshalJSON implements json.Marshaler, writing unknown members back.
func (f File) MarshalJSON() ([]byte, error) { return encodeKeeping(fileFields(f), f.Extra) }

// Skill is a skill's entry, as skills/list and skills/get return it.
//
// URI is the resource URI of its SKILL.md. Frontmatter is the SKILL.md
// frontmatter as the server rendered it, verbatim; Name and Description
// are read from it. Files is the complete manifest of the skill's files,
// SKILL.md included, or nil with Dynamic set when the server sends
// "dynamic" (content generated, no digests: nothing can be verified).
// Unknown members are kept in Extra.
type Skill struct {
	URI         string
	Frontmatter json.RawMessage
	Name        string
	Description string
	Files       []File
	Dynamic     bool

	Extra map[string]json.RawMessage
}

type skillWire struct {
	URI         string          `json:"uri"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	Resources   json.RawMessage `json:"resources"`
}

// UnmarshalJSON implements json.Unmarshaler: it decodes the entry's shape
// and keeps unknown members; Validate checks its meaning.
func (s *Skill) UnmarshalJSON(data []byte) error {
	var w skillWire
	extra, err := decodeKeeping(data, &w, "uri", "frontmatter", "resources")
	if err != nil {
		return err
	}
	out := Skill{URI: w.URI, Frontmatter: w.Frontmatter, Extra: extra}
	switch r := bytes.TrimSpace(w.Resources); {
	case len(r) == 0 || string(r) == "null":
		return fmt.Errorf("the entry %q has no resources (a file list, or %q)", w.URI, Dynamic)
	case r[0] == '"':
		var s string
		if err := json.Unmarshal(r, &s); err != nil || s != Dynamic {
			return fmt.Errorf("the entry %q has resources %s: want a file list or %q", w.URI, clip(r), Dynamic)
		}
		out.Dynamic = true
	case r[0] == '[':
		if err := json.Unmarshal(r, &out.Files); err != nil {
			return fmt.Errorf("the entry %q has resources that are not a list of {uri, digest, size}: %v", w.URI, err)
		}
		if out.Files == nil {
			out.Files = []File{}
		}
	default:
		return fmt.Errorf("the entry %q has resources %s: want a file list or %q", w.URI, clip(r), Dynamic)
	}
	if fm := bytes.TrimSpace(w.Frontmatter); len(fm) > 0 && fm[0] == '{' {
		var head struct {
			Name        any `json:"name"`
			Description any `json:"description"`
		}
		if err := json.Unmarshal(fm, &head); err != nil {
			return fmt.Errorf("the entry %q has a frontmatter that is not a JSON object: %v", w.URI, err)
		}
		out.Name, _ = head.Name.(string)
		out.Description, _ = head.Description.(string)
	}
	*s = out
	return nil
}

// MarshalJSON implements json.Marshaler: the entry as the server sent it,
// unknown members included.
func (s Skill) MarshalJSON() ([]byte, error) {
	w := skillWire{URI: s.URI, Frontmatter: s.Frontmatter}
	if len(w.Frontmatter) == 0 {
		w.Frontmatter = json.RawMessage(`{}`)
	}
	if s.Dynamic {
		w.Resources = json.RawMessage(`"` + Dynamic + `"`)
	} else {
		files := s.Files
		if files == nil {
			files = []File{}
		}
		b, err := json.Marshal(files)
		if err != nil {
			return nil, err
		}
		w.Resources = b
	}
	return encodeKeeping(w, s.Extra)
}

// Path is the skill's path: its SKILL.md URI without the scheme and
// without "/SKILL.md" (skill://acme/billing/refunds/SKILL.md is
// acme/billing/refunds).
func (s *Skill) Path() string {
	p := s.URI
	if i := strings.Index(p, "://"); i >= 0 {
		p = p[i+3:]
	} else if i := strings.IndexByte(p, ':'); i >= 0 {
		p = p[i+1:]
	}
	return strings.TrimSuffix(p, "/"+SkillFile)
}

// Root is the URI of the skill's directory: its SKILL.md URI without
// "/SKILL.md".
func (s *Skill) Root() string { return strings.TrimSuffix(s.URI, "/"+SkillFile) }

// File returns the manifest's entry for uri, or nil when the manifest does
// not list it (or the skill is dynamic).
func (s *Skill) File(uri string) *File {
	for i := range s.Files {
		if s.Files[i].URI == uri {
			return &s.Files[i]
		}
	}
	return nil
}

// TotalSize is the sum of the sizes of the manifest's files.
func (s *Skill) TotalSize() int64 {
	var n int64
	for _, f := range s.Files {
		n += f.Size
	}
	return n
}

// Validate checks what the extension requires of an entry: a SKILL.md
// URI whose last path segment is the frontmatter's name, which follows
// the Agent Skills naming rules (1 to 64 of a-z, 0-9 and single inner
// hyphens); a frontmatter object with a non-empty description; and a
// manifest of at most MaxResources files and MaxTotalSize bytes, each
// listed once, inside the skill's directory, with a sha256 digest and a
// size, SKILL.md among them — or "dynamic". The error wraps ErrInvalid or
// ErrOverLimit.
func (s *Skill) Validate() error {
	if err := checkURI(s.URI); err != nil {
		return failure(ErrInvalid, "skill entry: uri: %v", err)
	}
	if !strings.HasSuffix(s.URI, "/"+SkillFile) {
		return failure(ErrInvalid, "skill entry %q: the uri must be the skill's %s", s.URI, SkillFile)
	}
	fm := bytes.TrimSpace(s.Frontmatter)
	if len(fm) == 0 || fm[0] != '{' {
		return failure(ErrInvalid, "skill entry %q: frontmatter must be a JSON object", s.URI)
	}
	if err := checkName(s.Name); err != nil {
		return failure(ErrInvalid, "skill entry %q: frontmatter name: %v", s.URI, err)
	}
	if last := lastSegment(s.Path()); last != s.Name {
		return failure(ErrInvalid, "skill entry %q: its path ends in %q, not in the frontmatter name %q", s.URI, last, s.Name)
	}
	if strings.TrimSpace(s.Description) == "" {
		return failure(ErrInvalid, "skill entry %q: the frontmatter has no description (a non-empty string)", s.URI)
	}
	if s.Dynamic {
		return nil
	}
	if len(s.Files) > MaxResources {
		return failure(ErrOverLimit, "skill %q lists %d files, more than the extension's limit of %d", s.URI, len(s.Files), MaxResources)
	}
	root := s.Root() + "/"
	seen := make(map[string]bool, len(s.Files))
	var total int64
	for i, f := range s.Files {
		if err := checkURI(f.URI); err != nil {
			return failure(ErrInvalid, "skill %q: file %d: uri: %v", s.URI, i, err)
		}
		if f.URI != s.URI && (!strings.HasPrefix(f.URI, root) || !cleanPath(f.URI[len(root):])) {
			return failure(ErrInvalid, "skill %q: file %q is not inside the skill's directory %s", s.URI, f.URI, root)
		}
		if seen[f.URI] {
			return failure(ErrInvalid, "skill %q: file %q is listed twice", s.URI, f.URI)
		}
		seen[f.URI] = true
		if !validDigest(f.Digest) {
			return failure(ErrInvalid, "skill %q: file %q: digest %q is not sha256: and 64 lowercase hex digits", s.URI, f.URI, clip([]byte(f.Digest)))
		}
		if f.Size < 0 {
			return failure(ErrInvalid, "skill %q: file %q: size %d is negative", s.URI, f.URI, f.Size)
		}
		if f.Size > MaxTotalSize || total+f.Size > MaxTotalSize {
			return failure(ErrOverLimit, "skill %q: its files add up to more than the extension's limit of %d bytes", s.URI, MaxTotalSize)
		}
		total += f.Size
	}
	if !seen[s.URI] {
		return failure(ErrInvalid, "skill %q: the file list does not include its %s (it must list every file)", s.URI, SkillFile)
	}
	return nil
}

// checkURI accepts an absolute URI of at most 4096 bytes without
// characters that must not reach a terminal.
func checkURI(u string) error {
	switch {
	case u == "":
		return errors.New("empty")
	case len(u) > 4096:
		return fmt.Errorf("%d bytes long, more than 4096", len(u))
	case !utf8.ValidString(u):
		return errors.New("not valid UTF-8")
	}
	for _, r := range u {
		if safetext.Unsafe(r) || r == ' ' {
			return fmt.Errorf("%q holds a space, control or invisible character", safetext.Escape(u, false))
		}
	}
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" {
		return fmt.Errorf("%q is not an absolute URI", u)
	}
	return nil
}

// cleanPath reports whether p is a relative path of non-empty segments
// that are not . or ..
func cleanPath(p string) bool {
	if p == "" {
		return false
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// checkName applies the Agent Skills naming rules.
func checkName(n string) error {
	if n == "" {
		return errors.New("missing, or not a string")
	}
	if len(n) > 64 {
		return fmt.Errorf("%d characters, more than 64", len(n))
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(n)-1 && n[i-1] != '-':
		default:
			return fmt.Errorf("%q: a name is lowercase letters, digits and single hyphens between them", safetext.Escape(n, false))
		}
	}
	return nil
}

func lastSegment(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func validDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// clip is at most 64 bytes of b, for an error message.
func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

// decodeKeeping decodes data, a JSON object, into v and returns its
// members other than known.
func decodeKeeping(data []byte, v any, known ...string) (map[string]json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, err
	}
	if members == nil {
		return nil, errors.New("null, not a JSON object")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	for _, k := range known {
		delete(members, k)
	}
	if len(members) == 0 {
		return nil, nil
	}
	return members, nil
}

// encodeKeeping encodes v, a struct, with the members of extra that it
// does not have.
func encodeKeeping(v any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return nil, err
	}
	for k, val := range extra {
		if _, ok := members[k]; !ok {
			members[k] = val
		}
	}
	return json.Marshal(members)
}
