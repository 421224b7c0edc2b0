package jsonrpc

import (
	"errors"
	"strconv"
)

// ID is a JSON-RPC request ID: a string or an integer, never null.
//
// Integers that fit an int64 are kept as one; larger ones as their exact
// decimal text, so an ID larger than any Go integer type survives a round
// trip unchanged. ID is comparable and can be used as a map key; the zero ID
// is "no ID" (a notification, or the null ID of an error response to an
// unreadable request).
type ID struct {
	// text is the string value, or the decimal digits of an integer that
	// does not fit an int64; empty for one that does, which is n. Each
	// ID has one form, so that == compares IDs.
	text     string
	n        int64
	isString bool
	valid    bool
}

// Int64ID returns an integer ID.
func Int64ID(n int64) ID { return ID{n: n, valid: true} }

// StringID returns a string ID.
func StringID(s string) ID { return ID{text: s, isString: true, valid: true} }

// IsValid reports whether the ID is present (not the zero ID).
func (id ID) IsValid() bool { return id.valid }

// IsString reports whether the ID is a JSON string.
func (id ID) IsString() bool { return id.isString }

// Int64 returns the ID as an int64, and false if it is a string or does not
// fit.
func (id ID) Int64() (int64, bool) {
	if !id.valid || id.isString || id.text != "" {
		return 0, false
	}
	return id.n, true
}

// String returns the ID as text: the string itself, or the integer's digits.
// The zero ID is "<none>".
func (id ID) String() string {
	if !id.valid {
		return "<none>"
	}
	if !id.isString && id.text == "" {
		return strconv.FormatInt(id.n, 10)
	}
	return id.text
}

// AppendJSON appends the ID's JSON encoding to dst; the zero ID is null.
func (id ID) AppendJSON(dst []byte) []byte {
	switch {
	case !id.valid:
		return append(dst, "null"...)
	case id.isString:
		return appendString(dst, id.text)
	case id.text == "":
		return strconv.AppendInt(dst, id.n, 10)
	default:
		return append(dst, id.text...)
	}
}

// MarshalJSON implements json.Marshaler.
func (id ID) MarshalJSON() ([]byte, error) { return id.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler. It accepts a string, an integer
// of any size, or null (the zero ID).
func (id *ID) UnmarshalJSON(b []byte) error {
	parsed, err := parseID(b)
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// ParseID returns the id in raw (the JSON of an id member, such as a
// request's id or a progress token) and true, or false when raw is empty,
// null, or not a string or an integer.
func ParseID(raw []byte) (ID, bool) {
	id, err := parseID(raw)
	if err != nil || !id.IsValid() {
		return ID{}, false
	}
	return id, true
}

var errBadID = errors.New("jsonrpc: id must be a string or an integer")

// parseID decodes the raw JSON of an id member.
func parseID(b []byte) (ID, error) {
	b = trimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return ID{}, nil
	}
	if b[0] == '"' {
		s, err := unquote(b)
		if err != nil {
			return ID{}, errBadID
		}
		return StringID(s), nil
	}
	// An integer: optional minus, then digits without a leading zero. A
	// fraction or exponent is not an integer and is refused.
	digits := b
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
		return ID{}, errBadID
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return ID{}, errBadID
		}
	}
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		return Int64ID(n), nil // -0 is 0
	}
	return ID{text: string(b), valid: true}, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
