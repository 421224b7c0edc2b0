package skills

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/jsonrpc"
)

// Capability is the server's declaration of the extension. Unknown
// members are kept in Extra.
type Capability struct {
	// DirectoryRead: the server implements resources/directory/read.
	DirectoryRead bool `json:"directoryRead,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

// ServerCapability returns the server's declaration of the extension, from
// capabilities.extensions. The error wraps ErrNotDeclared when the server
// does not declare it, ErrInvalid when the declaration is not an object.
func ServerCapability(c *snodo.Client) (Capability, error) {
	raw, ok := c.Server().Capabilities.Extensions[ExtensionID]
	if !ok || len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return Capability{}, failure(ErrNotDeclared, "skills/list and skills/get are sent only to a server that declares them")
	}
	var capa Capability
	var flags struct {
		DirectoryRead *bool `json:"directoryRead"`
	}
	extra, err := decodeKeeping(raw, &flags, "directoryRead")
	if err != nil {
		return Capability{}, failure(ErrInvalid, "the server's %s capability is not an object of settings: %v", ExtensionID, err)
	}
	capa.DirectoryRead = flags.DirectoryRead != nil && *flags.DirectoryRead
	capa.Extra = extra
	return capa, nil
}

// ListResult is one page of skills/list. Unknown members (resultType
// among them) are kept in Extra.
type ListResult struct {
	Skills     []*Skill        `json:"skills"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
	snodo.Cache

	Extra map[string]json.RawMessage `json:"-"`
}

type listFields ListResult

// MarshalJSON implements json.Marshaler, writing unknown members back.
func (r ListResult) MarshalJSON() ([]byte, error) { return encodeKeeping(listFields(r), r.Extra) }

// GetResult is the result of skills/get. Unknown members are kept in
// Extra.
type GetResult struct {
	Skill *Skill          `json:"skill"`
	Meta  json.RawMessage `json:"_meta,omitempty"`
	snodo.Cache

	Extra map[string]json.RawMessage `json:"-"`
}

type getFields GetResult

// MarshalJSON implements json.Marshaler, writing unknown members back.
func (r GetResult) MarshalJSON() ([]byte, error) { return encodeKeeping(getFields(r), r.Extra) }

// DirectoryResult is one page of resources/directory/read: the direct
// children of a directory resource, subdirectories with the mimeType
// DirectoryMIMEType. Unknown members are kept in Extra.
type DirectoryResult struct {
	Resources  []*snodo.Resource `json:"resources"`
	NextCursor string            `json:"nextCursor,omitempty"`
	Meta       json.RawMessage   `json:"_meta,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

type dirFields DirectoryResult

// MarshalJSON implements json.Marshaler, writing unknown members back.
func (r DirectoryResult) MarshalJSON() ([]byte, error) { return encodeKeeping(dirFields(r), r.Extra) }

// request sends method with params and decodes the result into v, keeping
// the members other than known; a result that does not decode is an
// ErrInvalid error naming method.
func request(ctx context.Context, c *snodo.Client, method string, params any, v any, opts []snodo.CallOption, known ...string) (map[string]json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, failure(ErrInvalid, "params for %s: %v", method, err)
	}
	raw, err := c.Request(ctx, method, p, opts...)
	if err != nil {
		return nil, err
	}
	extra, err := decodeKeeping(raw, v, known...)
	if err != nil {
		return nil, failure(ErrInvalid, "invalid %s result: %v", method, err)
	}
	return extra, nil
}

type pageParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// List returns one page of the server's skills (cursor "" for the first),
// every entry checked with Validate. It sends nothing to a server that
// does not declare the extension.
func List(ctx context.Context, c *snodo.Client, cursor string, opts ...snodo.CallOption) (*ListResult, error) {
	if _, err := ServerCapability(c); err != nil {
		return nil, err
	}
	var res listFields
	extra, err := request(ctx, c, MethodList, pageParams{cursor}, &res, opts, "skills", "nextCursor", "_meta", "ttlMs", "cacheScope")
	if err != nil {
		return nil, err
	}
	out := ListResult(res)
	out.Extra = extra
	out.Received = time.Now()
	if out.Skills == nil {
		return nil, failure(ErrInvalid, "invalid %s result: it has no skills list", MethodList)
	}
	for i, s := range out.Skills {
		if s == nil {
			return nil, failure(ErrInvalid, "invalid %s result: skill %d is null", MethodList, i)
		}
		if err := s.Validate(); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// All iterates over every page of the server's skills. A cursor the
// server returns twice, or a listing past MaxListed skills, ends it with
// an error. The listing may be partial: a skill it does not hold may still
// be served (Get).
func All(ctx context.Context, c *snodo.Client, opts ...snodo.CallOption) iter.Seq2[*Skill, error] {
	return func(yield func(*Skill, error) bool) {
		cursor := ""
		seen := map[string]bool{}
		listed := 0
		for {
			res, err := List(ctx, c, cursor, opts...)
			if err != nil {
				yield(nil, err)
				return
			}
			if listed += len(res.Skills); listed > MaxListed {
				yield(nil, failure(ErrOverLimit, "the server's %s goes on past %d skills (%d pages); name the skill you want instead (Get, Resolve)", MethodList, MaxListed, len(seen)+1))
				return
			}
			for _, s := range res.Skills {
				if !yield(s, nil) {
					return
				}
			}
			if res.NextCursor == "" {
				return
			}
			if seen[res.NextCursor] {
				yield(nil, failure(ErrInvalid, "the server returned the %s cursor %q twice", MethodList, clip([]byte(res.NextCursor))))
				return
			}
			seen[res.NextCursor] = true
			cursor = res.NextCursor
		}
	}
}

// Get returns the entry of the skill whose SKILL.md is at uri, checked with
// Validate. An entry for another URI than the one asked for is refused.
func Get(ctx context.Context, c *snodo.Client, uri string, opts ...snodo.CallOption) (*GetResult, error) {
	if _, err := ServerCapability(c); err != nil {
		return nil, err
	}
	var res getFields
	extra, err := request(ctx, c, MethodGet, struct {
		URI string `json:"uri"`
	}{uri}, &res, opts, "skill", "_meta", "ttlMs", "cacheScope")
	if err != nil {
		return nil, err
	}
	out := GetResult(res)
	out.Extra = extra
	out.Received = time.Now()
	if out.Skill == nil {
		return nil, failure(ErrInvalid, "invalid %s result: it has no skill", MethodGet)
	}
	if err := out.Skill.Validate(); err != nil {
		return nil, err
	}
	if out.Skill.URI != uri {
		return nil, failure(ErrInvalid, "%s for %q answered the entry of another skill, %q", MethodGet, uri, out.Skill.URI)
	}
	return &out, nil
}

// Resolve returns the entry of the skill ref names: a SKILL.md URI
// (anything with a scheme) is asked for with Get; a name (git-workflow) or
// a skill path (acme/billing/refunds) is looked up in the listing and its
// entry asked for with Get. A name that several listed skills share is an
// ErrAmbiguous error that lists their URIs; a name the listing does not
// hold is asked for as skill://REF/SKILL.md (the server confirms whether
// it serves it), and an ErrNotFound error when it does not.
func Resolve(ctx context.Context, c *snodo.Client, ref string, opts ...snodo.CallOption) (*GetResult, error) {
	if strings.Contains(ref, ":") {
		return Get(ctx, c, ref, opts...)
	}
	if !cleanPath(ref) || safetext.Needs(ref, false) || strings.ContainsAny(ref, " ?#") {
		return nil, failure(ErrNotFound, "%q is neither a skill name, a skill path (a/b/name) nor a SKILL.md URI", safetext.Escape(ref, false))
	}
	var matches []*Skill
	for s, err := range All(ctx, c, opts...) {
		if err != nil {
			return nil, err
		}
		if s.Name == ref || s.Path() == ref {
			matches = append(matches, s)
		}
	}
	switch len(matches) {
	case 1:
		return Get(ctx, c, matches[0].URI, opts...)
	case 0:
		uri := "skill://" + ref + "/" + SkillFile
		res, err := Get(ctx, c, uri, opts...)
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Kind == jsonrpc.KindServer && je.Code == jsonrpc.CodeInvalidParams {
			return nil, &snodo.Error{Kind: jsonrpc.KindServer, Code: je.Code, Cause: ErrNotFound,
				Message: fmt.Sprintf("no skill %q: the server's listing has none of that name or path, and it serves none at %s (%s)", ref, uri, je.Message)}
		}
		return res, err
	}
	uris := make([]string, len(matches))
	for i, s := range matches {
		uris[i] = s.URI
	}
	return nil, failure(ErrAmbiguous, "%d skills are named %q: %s; give the path or the URI of the one you mean", len(matches), ref, strings.Join(uris, ", "))
}

// ReadDirectory returns one page of the children of the directory
// resource at uri (a skill's root is its SKILL.md URI without
// "/SKILL.md"). It sends nothing to a server that does not declare
// directoryRead. The listing is the server's current view: it does not
// extend a skill's manifest, which alone says what ReadFile accepts.
func ReadDirectory(ctx context.Context, c *snodo.Client, uri, cursor string, opts ...snodo.CallOption) (*DirectoryResult, error) {
	capa, err := ServerCapability(c)
	if err != nil {
		return nil, err
	}
	if !capa.DirectoryRead {
		return nil, failure(ErrNoDirectoryRead, "%s is sent only to a server that declares it (a skill's files are listed in its entry)", MethodDirectoryRead)
	}
	var res dirFields
	extra, err := request(ctx, c, MethodDirectoryRead, struct {
		URI    string `json:"uri"`
		Cursor string `json:"cursor,omitempty"`
	}{uri, cursor}, &res, opts, "resources", "nextCursor", "_meta")
	if err != nil {
		return nil, err
	}
	out := DirectoryResult(res)
	out.Extra = extra
	if out.Resources == nil {
		return nil, failure(ErrInvalid, "invalid %s result: it has no resources list", MethodDirectoryRead)
	}
	for i, r := range out.Resources {
		if r == nil {
			return nil, failure(ErrInvalid, "invalid %s result: resource %d is null", MethodDirectoryRead, i)
		}
		if err := checkURI(r.URI); err != nil {
			return nil, failure(ErrInvalid, "invalid %s result: resource %d: uri: %v", MethodDirectoryRead, i, err)
		}
	}
	return &out, nil
}

// Directory iterates over every page of the children of the directory
// resource at uri.
func Directory(ctx context.Context, c *snodo.Client, uri string, opts ...snodo.CallOption) iter.Seq2[*snodo.Resource, error] {
	return func(yield func(*snodo.Resource, error) bool) {
		cursor := ""
		seen := map[string]bool{}
		for {
			res, err := ReadDirectory(ctx, c, uri, cursor, opts...)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, r := range res.Resources {
				if !yield(r, nil) {
					return
				}
			}
			if res.NextCursor == "" {
				return
			}
			if seen[res.NextCursor] {
				yield(nil, failure(ErrInvalid, "the server returned the %s cursor %q twice", MethodDirectoryRead, clip([]byte(res.NextCursor))))
				return
			}
			seen[res.NextCursor] = true
			cursor = res.NextCursor
		}
	}
}

// Content is a file of a skill as ReadFile returns it: its raw bytes, and
// whether they were verified against the entry (false only for a dynamic
// skill, whose entry has no digests).
type Content struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Size     int64  `json:"size"`
	Digest   string `json:"digest"`
	Verified bool   `json:"verified"`
	// Text is the content when the server sent it as text; otherwise Blob
	// holds it, base64-encoded as the server sent it.
	Text *string `json:"text,omitempty"`
	Blob string  `json:"blob,omitempty"`

	// Bytes is the raw content, the bytes the digest covers.
	Bytes []byte `json:"-"`
}

// FileURI resolves file against the skill's root: "" is its SKILL.md, a
// relative path (references/GUIDE.md) is under its directory, and a URI
// is taken as it is. A path with empty, . or .. segments is refused.
func FileURI(s *Skill, file string) (string, error) {
	switch {
	case file == "":
		return s.URI, nil
	case strings.Contains(file, "://"):
		return file, nil
	case !cleanPath(file):
		return "", failure(ErrNotFound, "%q is not a path inside the skill (no empty, . or .. segments, no leading /)", safetext.Escape(file, false))
	}
	return s.Root() + "/" + file, nil
}

// ReadFile reads the file at uri of the skill s with resources/read and
// verifies it: the manifest must list uri, and the content must have the
// manifest's size and digest; a SKILL.md's frontmatter must be the
// entry's. A failure wraps ErrVerification and returns no content; refresh
// the entry (Get) and read again when the skill may have changed. For a
// dynamic skill nothing can be verified: the content is returned with
// Verified false, up to MaxTotalSize bytes.
func ReadFile(ctx context.Context, c *snodo.Client, s *Skill, uri string, opts ...snodo.CallOption) (*Content, error) {
	var want *File
	if !s.Dynamic {
		if want = s.File(uri); want == nil {
			return nil, failure(ErrVerification, "%s is not one of the files of skill %s; its entry lists %d (skills get %s)", uri, s.URI, len(s.Files), s.URI)
		}
	}
	res, err := c.ReadResource(ctx, uri, opts...)
	if err != nil {
		return nil, err
	}
	var rc *snodo.ResourceContents
	for _, x := range res.Contents {
		if x != nil && x.URI == uri {
			if rc != nil {
				return nil, failure(ErrInvalid, "resources/read of %s answered two contents for it", uri)
			}
			rc = x
		}
	}
	if rc == nil {
		return nil, failure(ErrInvalid, "resources/read of %s answered no content for that URI", uri)
	}
	limit := int64(MaxTotalSize)
	if want != nil {
		limit = want.Size
	}
	out := &Content{URI: uri, MIMEType: rc.MIMEType, Verified: want != nil}
	switch {
	case rc.Text != nil:
		if int64(len(*rc.Text)) > limit {
			return nil, sizeMismatch(s, uri, want, int64(len(*rc.Text)))
		}
		out.Bytes = []byte(*rc.Text)
		out.Text = rc.Text
	default:
		if int64(base64.StdEncoding.DecodedLen(len(rc.Blob))) > limit+3 {
			return nil, sizeMismatch(s, uri, want, int64(base64.StdEncoding.DecodedLen(len(rc.Blob))))
		}
		b, err := base64.StdEncoding.DecodeString(rc.Blob)
		if err != nil {
			return nil, failure(ErrInvalid, "resources/read of %s: the blob is not base64: %v", uri, err)
		}
		out.Bytes, out.Blob = b, rc.Blob
	}
	sum := sha256.Sum256(out.Bytes)
	out.Size, out.Digest = int64(len(out.Bytes)), "sha256:"+hex.EncodeToString(sum[:])
	if want == nil {
		if out.Size > limit {
			return nil, sizeMismatch(s, uri, nil, out.Size)
		}
		return out, nil
	}
	if out.Size != want.Size {
		return nil, sizeMismatch(s, uri, want, out.Size)
	}
	if out.Digest != want.Digest {
		return nil, failure(ErrVerification, "%s of skill %s has digest %s, its entry says %s (the skill may have changed: skills get %s)", uri, s.URI, out.Digest, want.Digest, s.URI)
	}
	if uri == s.URI {
		if err := VerifyFrontmatter(s, out.Bytes); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sizeMismatch(s *Skill, uri string, want *File, got int64) error {
	if want == nil {
		return failure(ErrOverLimit, "%s of dynamic skill %s is %d bytes or more, over the extension's limit of %d", uri, s.URI, got, MaxTotalSize)
	}
	return failure(ErrVerification, "%s of skill %s is %d bytes, its entry says %d (the skill may have changed: skills get %s)", uri, s.URI, got, want.Size, s.URI)
}
