package main

import (
	"errors"
	"fmt"
)

// fold returns s as the checks read it: look-alike letters, digits,
// spaces, dashes and slashes as their ASCII forms, invisible characters
// dropped. A control character (other than tab, newline and carriage
// return) is an error: no shell command needs one, and a server may cut
// the line there; so is U+FFFD, which invalid UTF-8 decodes to.
func fold(s string) (string, error) {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 0x20 && r < 0x7f, r == '\t' || r == '\n' || r == '\r':
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			return "", fmt.Errorf("holds the control character U+%04X", r)
		case r == 0xfffd:
			// Invalid UTF-8 or a lone surrogate escape, decoded as U+FFFD
			// here, may be decoded as something else by the server.
			return "", errors.New("holds invalid UTF-8 or U+FFFD")
		case invisible(r):
			continue
		case r == 0xa0 || r == 0x1680 || r >= 0x2000 && r <= 0x200a || r == 0x202f || r == 0x205f || r == 0x3000:
			r = ' '
		case r == 0x2028 || r == 0x2029 || r == 0x85:
			r = '\n'
		case r >= 0xff01 && r <= 0xff5e: // fullwidth ASCII
			r -= 0xfee0
		case r >= 0xe000 && r <= 0xf8ff: // private use (the reader marks braces with these)
			r = 0xfffd
		case r >= 0x1d400 && r <= 0x1d6a3: // mathematical letters
			if k := (r - 0x1d400) % 52; k < 26 {
				r = 'A' + k
			} else {
				r = 'a' + k - 26
			}
		case r >= 0x1d7ce && r <= 0x1d7ff: // mathematical digits
			r = '0' + (r-0x1d7ce)%10
		case r >= 0x2010 && r <= 0x2015 || r == 0x2212 || r == 0xfe58 || r == 0xfe63 || r == 0x2043:
			r = '-'
		case r == 0x2044 || r == 0x2215 || r == 0x29f8 || r == 0x2571:
			r = '/'
		default:
			if a, ok := lookalike[r]; ok {
				r = a
			}
		}
		out = append(out, r)
	}
	return string(out), nil
}

// invisible reports whether r is a character that shows nothing: format
// characters, zero-width spaces and joiners, bidirectional controls,
// variation selectors, tags.
func invisible(r rune) bool {
	switch {
	case r == 0xad, r == 0x34f, r == 0x61c, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5,
		r >= 0x180b && r <= 0x180f, r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e,
		r >= 0x2060 && r <= 0x206f, r == 0x3164, r >= 0xfe00 && r <= 0xfe0f, r == 0xfeff, r == 0xffa0,
		r >= 0xfff0 && r <= 0xfff8, r >= 0xe0000 && r <= 0xe0fff, r >= 0x1d173 && r <= 0x1d17a:
		return true
	}
	return false
}

// lookalike maps Cyrillic, Greek and other letters that look like Latin
// ones to those.
var lookalike = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'һ': 'h', 'і': 'i', 'ї': 'i', 'ј': 'j', 'к': 'k', 'ӏ': 'l', 'м': 'm',
	'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c', 'ѕ': 's', 'т': 't', 'у': 'y', 'х': 'x', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w',
	'ɡ': 'g', 'ո': 'n', 'ս': 'u', 'г': 'r',
	'А': 'A', 'В': 'B', 'Е': 'E', 'Н': 'H', 'І': 'I', 'Ј': 'J', 'К': 'K', 'М': 'M', 'О': 'O', 'Р': 'P',
	'С': 'C', 'Ѕ': 'S', 'Т': 'T', 'Х': 'X', 'У': 'Y', 'Ԁ': 'D', 'Ԛ': 'Q', 'Ԝ': 'W',
	// Greek
	'α': 'a', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x', 'γ': 'y',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O',
	'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	// Latin small capitals and others
	'ʀ': 'r', 'ᴍ': 'm', 'ꜱ': 's', 'ᴅ': 'd', 'ᴋ': 'k', 'ғ': 'f', 'ı': 'i', 'ℓ': 'l',
	// Look-alike punctuation the shell reads
	'；': ';', '｜': '|', '＆': '&', '＞': '>', '＜': '<',
}
