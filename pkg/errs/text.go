package errs

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text checks free text a caller sent in field: valid UTF-8 of at most max characters; a
// 400 naming the field otherwise.
func Text(field, v string, max int) error {
	if !utf8.ValidString(v) || utf8.RuneCountInString(v) > max {
		return Invalid("%s must be valid text of at most %d characters", field, max)
	}
	return nil
}

// SearchText checks a substring to search for: Text, and no control characters, which no
// searched value holds and which the database refuses in a pattern (NUL).
func SearchText(field, v string, max int) error {
	if err := Text(field, v, max); err != nil {
		return err
	}
	if strings.ContainsFunc(v, unicode.IsControl) {
		return Invalid("%s must not contain control characters", field)
	}
	return nil
}
