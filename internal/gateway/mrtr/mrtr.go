// Package mrtr serves the 2026-07-28 multi round-trip requests (tools/call,
// prompts/get, resources/read answered with an input_required result) of
// the gateway's hosts so that any replica can take any round.
//
// The gateway does not keep a backend call open while the host gathers its
// inputs. Each host request is one call to the backend server that sends
// one round (internal/clienthook.OneRound). When the server asks for input,
// the gateway answers what the server's Wasm modules cover
// (CallRequest.Answer) and sends the next round itself; the rest goes back
// to the host as an input_required result whose requestState is a sealed
// blob holding what the retry needs: the server's own requestState and the
// modules' answers. The host's retry, on any replica with the same key,
// opens the blob, merges the modules' answers with the host's
// inputResponses, and sends the next round. Input keys are the server's.
//
// # Sealing
//
// The blob is "s1." and the unpadded base64url of a 12-byte random nonce
// followed by the AES-256-GCM seal of a JSON document under the key. The
// document binds the state to its request: the backend server's name, the
// method, the identity's name (empty for an anonymous host), a SHA-256
// digest of the request's params without _meta, inputResponses and
// requestState (spacing and the order of its members aside; strings as
// their bytes, escapes included), and an expiry (TTL, default 10
// minutes). It also carries the number of rounds the request has taken,
// the keys the host was asked for, the server's requestState and the
// modules' answers.
//
// # Threat model
//
// The host is hostile and holds the blob. It cannot read it (the server's
// requestState and the modules' answers stay confidential) nor change it
// (GCM's tag), nor use it for another server, method, identity or params,
// nor after its expiry: each of these is refused with -32602
// "requestState is not valid for this request; start over" before the
// backend is touched, as is a blob sealed under another key. The host
// answers only the keys it was asked for: an inputResponses member for a
// key the modules answered, or for a key nobody asked, is dropped, as are
// inputResponses sent without requestState, so that a host never speaks
// for a module to a server that reads inputResponses without state.
// Params a decoder could read two ways (the same key twice, at any depth)
// are refused, so that the digest and the server read the same values.
//
// A blob is not single-use: within its lifetime the same identity may
// replay it on the same request, as the specification allows; a server
// for which an input must be consumed once enforces it itself. Every
// replica that serves the same hosts needs the same key: the config's
// stateKey, 64 hexadecimal digits (`openssl rand -hex 32`) or "env:NAME"
// to read them from the environment variable NAME (ParseKey), and clocks
// close enough for the expiry. Without one, New draws a random key: retries are then tied
// to the replica (the process) that answered the round before, and a
// retry on another replica or after a restart fails with the error above
// (the host starts over). The key is never rotated while blobs are alive:
// a new key refuses the old blobs the same way.
//
// # Bounds
//
// A host's requestState longer than MaxStateBytes is refused unopened; the
// server's requestState and the modules' answers a blob carries are
// bounded by MaxCarriedBytes; an input_required result may ask for at most
// MaxInputs inputs, with keys of at most MaxKeyBytes; one host request
// sends at most MaxRoundsPerCall rounds to the server, and one multi
// round-trip request, across all its retries, at most MaxRounds.
package mrtr

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/clienthook"
	"github.com/snodo/snodo/jsonrpc"
)

// Bounds; see the package documentation.
const (
	KeyBytes         = 32
	DefaultTTL       = 10 * time.Minute
	MaxStateBytes    = 256 << 10
	MaxCarriedBytes  = 128 << 10
	MaxInputs        = 32
	MaxKeyBytes      = 256
	MaxRoundsPerCall = 8
	MaxRounds        = 32
)

// statePrefix marks a blob of this format.
const statePrefix = "s1."

// ErrInvalidState is the cause of the error for a requestState that is not
// valid for the request it came with.
var ErrInvalidState = errors.New("requestState is not valid for this request; start over")

// ParseKey reads the config's stateKey: 64 hexadecimal digits (32 bytes,
// for AES-256), or "env:NAME" for the same in the environment variable
// NAME. An empty value gives a nil key (New then draws a random one).
func ParseKey(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	what := "stateKey"
	if name, ok := strings.CutPrefix(s, "env:"); ok {
		v, set := os.LookupEnv(name)
		if name == "" || !set || v == "" {
			return nil, fmt.Errorf("stateKey %q: the environment variable %q is not set; set it to 64 hexadecimal digits (e.g. the output of `openssl rand -hex 32`), the same on every replica", s, name)
		}
		s, what = strings.TrimSpace(v), "the environment variable "+name+" (stateKey)"
	}
	key, err := hex.DecodeString(s)
	if err != nil || len(key) != KeyBytes {
		return nil, fmt.Errorf("%s must be %d hexadecimal digits (%d bytes), e.g. the output of `openssl rand -hex 32`, or \"env:NAME\"; got %d characters", what, 2*KeyBytes, KeyBytes, len(s))
	}
	return key, nil
}

// Rounds serves multi round-trip requests under one key. It is safe for
// concurrent use.
type Rounds struct {
	aead cipher.AEAD
	ttl  time.Duration
	now  func() time.Time
}

// New returns a Rounds sealing under key (KeyBytes bytes; ParseKey reads
// the config's form). A nil key draws a random one: retries then work on
// this process only.
func New(key []byte) (*Rounds, error) {
	if key == nil {
		key = make([]byte, KeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	if len(key) != KeyBytes {
		return nil, fmt.Errorf("mrtr: the state key must be %d bytes, got %d", KeyBytes, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Rounds{aead: aead, ttl: DefaultTTL, now: time.Now}, nil
}

// SetTTL sets how long a sealed requestState stays valid (default 10
// minutes); call it before the first Call.
func (r *Rounds) SetTTL(d time.Duration) {
	if d > 0 {
		r.ttl = d
	}
}

// Client is the backend connection (a *snodo.Client).
type Client interface {
	Request(ctx context.Context, method string, params json.RawMessage, opts ...snodo.CallOption) (json.RawMessage, error)
}

// AnswerFunc answers an input request for the gateway (the server's Wasm
// modules): ok false when it does not cover the request, which then goes to
// the host. An error fails the host's request.
type AnswerFunc func(ctx context.Context, method string, params json.RawMessage) (result json.RawMessage, ok bool, err error)

// CallRequest is one host request for a backend server.
type CallRequest struct {
	// Server is the backend server's name.
	Server string
	// Method is the request's method.
	Method string
	// Params are the params for the server (names as the server knows
	// them). Members inputResponses and requestState are dropped: the
	// host's go in the fields below (Split separates them).
	Params json.RawMessage
	// InputResponses are the host's inputResponses (a JSON object), or nil.
	InputResponses json.RawMessage
	// RequestState is the host's requestState, or "".
	RequestState string
	// Identity is the host identity's name, or "" for an anonymous host.
	Identity string
	// Answer answers the inputs the gateway covers itself; nil: none.
	Answer AnswerFunc
}

// Split takes a host's inputResponses and requestState out of its params.
// A requestState that is not a string is an error (-32602).
func Split(params json.RawMessage) (rest, inputResponses json.RawMessage, requestState string, err error) {
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(params)) == 0 {
		return params, nil, "", nil
	}
	if err := json.Unmarshal(params, &m); err != nil || m == nil {
		return nil, nil, "", invalidParams(nil, "params must be a JSON object")
	}
	ir, hasIR := m["inputResponses"]
	rs, hasRS := m["requestState"]
	if !hasIR && !hasRS {
		return params, nil, "", nil
	}
	if hasRS && string(rs) != "null" {
		if err := json.Unmarshal(rs, &requestState); err != nil {
			return nil, nil, "", invalidParams(nil, "requestState must be a string, as the gateway gave it")
		}
	}
	if string(ir) != "null" {
		inputResponses = ir
	}
	delete(m, "inputResponses")
	delete(m, "requestState")
	rest, err = json.Marshal(m)
	return rest, inputResponses, requestState, err
}

// sealed is the document a blob seals.
type sealed struct {
	Server   string                     `json:"s"`
	Method   string                     `json:"m"`
	Identity string                     `json:"i"`
	Digest   []byte                     `json:"d"`
	Expires  int64                      `json:"e"` // Unix milliseconds
	Rounds   int                        `json:"r"`
	Asked    []string                   `json:"k,omitempty"`
	Backend  *string                    `json:"b,omitempty"`
	Answers  map[string]json.RawMessage `json:"a,omitempty"`
}

// seal encrypts st.
func (r *Rounds) seal(st *sealed) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, r.aead.NonceSize(), r.aead.NonceSize()+len(plain)+r.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return statePrefix + base64.RawURLEncoding.EncodeToString(r.aead.Seal(nonce, nonce, plain, []byte(statePrefix))), nil
}

// open decrypts and authenticates a blob, and checks its expiry; it does
// not check what the blob is bound to (Call does).
func (r *Rounds) open(blob string) (*sealed, error) {
	if len(blob) > MaxStateBytes {
		return nil, fmt.Errorf("requestState is %d bytes, more than %d", len(blob), MaxStateBytes)
	}
	b64, ok := strings.CutPrefix(blob, statePrefix)
	if !ok {
		return nil, errors.New("requestState was not issued by this gateway")
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(b64)
	if err != nil || len(raw) < r.aead.NonceSize()+r.aead.Overhead() {
		return nil, errors.New("requestState is malformed")
	}
	ns := r.aead.NonceSize()
	plain, err := r.aead.Open(nil, raw[:ns], raw[ns:], []byte(statePrefix))
	if err != nil {
		return nil, errors.New("requestState fails authentication (altered, or sealed under another key)")
	}
	var st sealed
	if err := json.Unmarshal(plain, &st); err != nil {
		return nil, errors.New("requestState holds no valid state")
	}
	if r.now().UnixMilli() >= st.Expires {
		return nil, errors.New("requestState has expired")
	}
	return &st, nil
}

// Open reports whether blob is a requestState this Rounds sealed and that
// has not expired. It never panics, whatever blob holds.
func (r *Rounds) Open(blob string) error {
	_, err := r.open(blob)
	return err
}

// digest is the SHA-256 of params without _meta, inputResponses and
// requestState, in a canonical form that costs one pass: the members
// sorted by key, each value compacted (json.Compact: spacing dropped,
// every string and number kept as its bytes, escapes included, so that two
// values a decoder would read alike, such as invalid UTF-8 and lone
// surrogates that all read as U+FFFD, keep apart). Nested members keep
// their order.
func digest(params json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(params)) > 0 {
		if err := json.Unmarshal(params, &m); err != nil {
			return nil, err
		}
	}
	delete(m, "_meta")
	delete(m, "inputResponses")
	delete(m, "requestState")
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		if err := json.Compact(&buf, m[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	sum := sha256.Sum256(buf.Bytes())
	return sum[:], nil
}

func invalidParams(cause error, format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Kind: jsonrpc.KindProtocol, Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...), Cause: cause}
}

func internalError(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Kind: jsonrpc.KindServer, Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, args...)}
}

// inputRequired is a server's InputRequiredResult.
type inputRequired struct {
	ResultType    string
	InputRequests map[string]json.RawMessage
	RequestState  *string
}

type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Call serves one host request: see the package documentation. Its result
// is the server's complete result, or an input_required result for the
// host; its error is a *jsonrpc.Error for the host.
func (r *Rounds) Call(ctx context.Context, c Client, req CallRequest) (json.RawMessage, error) {
	if len(bytes.TrimSpace(req.Params)) == 0 {
		req.Params = json.RawMessage(`{}`)
	}
	if err := intercept.CheckUnambiguous(req.Params); err != nil {
		return nil, invalidParams(err, "%s params: %v", req.Method, err)
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(req.Params, &params); err != nil {
		return nil, invalidParams(err, "%s params must be a JSON object", req.Method)
	}
	delete(params, "inputResponses")
	delete(params, "requestState")
	sum, err := digest(req.Params)
	if err != nil {
		return nil, invalidParams(err, "%s params: %v", req.Method, err)
	}

	responses, backend, rounds, err := r.resume(req, sum)
	if err != nil {
		return nil, err
	}
	// Without requestState the host was asked for nothing: its
	// inputResponses, if any, are dropped.

	one := clienthook.OneRound().(snodo.CallOption)
	for n := 0; ; n++ {
		if rounds >= MaxRounds {
			return nil, internalError("%s on %s: the server still asks for input after %d rounds; the gateway gives up", req.Method, req.Server, MaxRounds)
		}
		if n >= MaxRoundsPerCall {
			return nil, internalError("%s on %s: the server asked for input the gateway answers %d times in a row; the gateway gives up", req.Method, req.Server, n)
		}
		p := maps.Clone(params)
		if p == nil {
			p = map[string]json.RawMessage{}
		}
		if responses != nil {
			b, err := json.Marshal(responses)
			if err != nil {
				return nil, err
			}
			p["inputResponses"] = b
		}
		if backend != nil {
			b, _ := json.Marshal(*backend)
			p["requestState"] = b
		}
		body, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		res, err := c.Request(ctx, req.Method, body, one)
		if err != nil {
			return nil, err
		}
		rounds++
		ir, err := readInputRequired(res)
		if err != nil {
			return nil, internalError("%s on %s: %v", req.Method, req.Server, err)
		}
		if ir == nil {
			return res, nil
		}

		answers, host, asked, err := sortInputs(ctx, req, ir)
		if err != nil {
			return nil, err
		}
		if len(asked) == 0 {
			// All answered here (or state only): the next round.
			responses, backend = answers, ir.RequestState
			if len(ir.InputRequests) == 0 {
				responses = nil
			}
			continue
		}
		blob, err := r.seal(&sealed{
			Server: req.Server, Method: req.Method, Identity: req.Identity, Digest: sum,
			Expires: r.now().Add(r.ttl).UnixMilli(), Rounds: rounds,
			Asked: asked, Backend: ir.RequestState, Answers: answers,
		})
		if err != nil {
			return nil, err
		}
		if len(blob) > MaxStateBytes {
			// Escapes can make the sealed document larger than what
			// it carries: the host could not send it back.
			return nil, internalError("%s on %s: the state the gateway would hand the host is %d bytes, more than the %d it takes back", req.Method, req.Server, len(blob), MaxStateBytes)
		}
		return json.Marshal(struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}{"input_required", host, blob})
	}
}

// resume opens the host's requestState, if any, and returns what the next
// round sends: the inputResponses (the host's answers to the keys it was
// asked for and the modules' answers), the server's requestState, and the
// rounds the request has taken. A state that is not valid for req (its
// params' digest sum) is refused with -32602 ErrInvalidState.
func (r *Rounds) resume(req CallRequest, sum []byte) (responses map[string]json.RawMessage, backend *string, rounds int, err error) {
	if req.RequestState == "" {
		return nil, nil, 0, nil
	}
	st, err := r.open(req.RequestState)
	if err == nil && (st.Server != req.Server || st.Method != req.Method || st.Identity != req.Identity || !bytes.Equal(st.Digest, sum)) {
		err = errors.New("requestState was issued for another request")
	}
	if err != nil {
		e := invalidParams(errors.Join(ErrInvalidState, err), "%s", ErrInvalidState.Error())
		e.Data, _ = json.Marshal(map[string]string{"reason": err.Error()})
		return nil, nil, 0, e
	}
	var host map[string]json.RawMessage
	if len(req.InputResponses) > 0 {
		if err := json.Unmarshal(req.InputResponses, &host); err != nil {
			return nil, nil, 0, invalidParams(err, "inputResponses must be a JSON object of the answers to the inputRequests, keyed as they were")
		}
	}
	responses = make(map[string]json.RawMessage, len(st.Asked)+len(st.Answers))
	for _, k := range st.Asked {
		if v, ok := host[k]; ok {
			responses[k] = v
		}
	}
	for k, v := range st.Answers {
		responses[k] = v
	}
	return responses, st.Backend, st.Rounds, nil
}

// sortInputs answers the input requests of ir that req.Answer covers and
// returns those answers, the requests left for the host (as the host gets
// them) and their keys, sorted.
func sortInputs(ctx context.Context, req CallRequest, ir *inputRequired) (answers, host map[string]json.RawMessage, asked []string, err error) {
	keys := make([]string, 0, len(ir.InputRequests))
	for k := range ir.InputRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	answers = map[string]json.RawMessage{}
	carried := 0
	if ir.RequestState != nil {
		carried = len(*ir.RequestState)
	}
	host = map[string]json.RawMessage{}
	for _, k := range keys {
		var in inputRequest
		if err := json.Unmarshal(ir.InputRequests[k], &in); err != nil || in.Method == "" {
			return nil, nil, nil, internalError("%s on %s: input request %q is not a request object", req.Method, req.Server, k)
		}
		if len(in.Params) == 0 || string(in.Params) == "null" {
			in.Params = json.RawMessage(`{}`)
		}
		var (
			ans json.RawMessage
			ok  bool
		)
		if req.Answer != nil {
			ans, ok, err = req.Answer(ctx, in.Method, in.Params)
			if err != nil {
				return nil, nil, nil, err
			}
		}
		if ok {
			if !json.Valid(ans) || bytes.TrimSpace(ans)[0] != '{' {
				return nil, nil, nil, internalError("%s on %s: the answer to input request %q (%s) is not a JSON object", req.Method, req.Server, k, in.Method)
			}
			answers[k] = ans
			carried += len(k) + len(ans)
			continue
		}
		b, err := json.Marshal(in)
		if err != nil {
			return nil, nil, nil, internalError("%s on %s: input request %q: %v", req.Method, req.Server, k, err)
		}
		host[k] = b
		asked = append(asked, k)
	}
	if carried > MaxCarriedBytes {
		return nil, nil, nil, internalError("%s on %s: the server's requestState and the answers the gateway carries for it are %d bytes, more than %d", req.Method, req.Server, carried, MaxCarriedBytes)
	}
	return answers, host, asked, nil
}

// readInputRequired reads a result: nil for a complete one, the input
// requests of an input_required one, an error past the bounds.
func readInputRequired(res json.RawMessage) (*inputRequired, error) {
	// Exact member names, as the client reads them (a decoder into a
	// struct would also take "ResultType").
	var m map[string]json.RawMessage
	if err := json.Unmarshal(res, &m); err != nil {
		return nil, fmt.Errorf("the server's result is not a JSON object: %v", err)
	}
	var ir inputRequired
	if json.Unmarshal(m["resultType"], &ir.ResultType) != nil || ir.ResultType != "input_required" {
		return nil, nil
	}
	if err := json.Unmarshal(m["inputRequests"], &ir.InputRequests); m["inputRequests"] != nil && err != nil {
		return nil, fmt.Errorf("the server's inputRequests is not an object: %v", err)
	}
	if err := json.Unmarshal(m["requestState"], &ir.RequestState); m["requestState"] != nil && err != nil {
		return nil, fmt.Errorf("the server's requestState is not a string: %v", err)
	}
	if len(ir.InputRequests) > MaxInputs {
		return nil, fmt.Errorf("the server asks for %d inputs at once, more than the %d the gateway carries", len(ir.InputRequests), MaxInputs)
	}
	for k := range ir.InputRequests {
		if len(k) > MaxKeyBytes {
			return nil, fmt.Errorf("the server asks for an input with a key of %d bytes, more than %d", len(k), MaxKeyBytes)
		}
	}
	if ir.RequestState != nil && len(*ir.RequestState) > MaxCarriedBytes {
		return nil, fmt.Errorf("the server's requestState is %d bytes, more than the %d the gateway carries", len(*ir.RequestState), MaxCarriedBytes)
	}
	return &ir, nil
}
