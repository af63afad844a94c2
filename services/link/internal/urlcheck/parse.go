package urlcheck

import (
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// parse runs the syntactic checks (rules on length, characters, scheme, credentials and
// port) and returns the destination's normalised host. It does not decide whether that host
// is allowed; New uses it for the base URL too, which is why it has no blocking logic.
//
// Credentials and ports are judged on the raw authority rather than on url.Parse's result
// because url.Parse rejects some of those inputs outright, and the caller deserves the
// specific reason rather than a generic one.
func (v *Validator) parse(raw string) (host, *Error) {
	if strings.TrimSpace(raw) == "" {
		return host{}, fail(reasonRequired)
	}
	if len(raw) > MaxLength {
		return host{}, fail(reasonTooLong)
	}
	// Browsers silently strip tabs and newlines from URLs and url.Parse refuses other control
	// characters; refusing them all up front removes any parser disagreement they could cause.
	if strings.IndexFunc(raw, isSpaceOrControl) >= 0 {
		return host{}, fail(reasonSpaces)
	}

	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok || !(strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https")) {
		return host{}, fail(reasonScheme)
	}
	// Browsers read "http:example.com" and "http:/example.com" as having a host, url.Parse
	// does not; requiring "//" means both agree on where the authority is.
	afterSlashes, ok := strings.CutPrefix(rest, "//")
	if !ok {
		return host{}, fail(reasonNoHost)
	}
	authority := afterSlashes
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	// Any "@" means user-info to url.Parse, including the "http://example.com@127.0.0.1"
	// trick whose real host is the part a reader's eye skips. A backslash before it is still
	// refused here: url.Parse rejects it, and browsers would treat it as a path separator.
	if strings.Contains(authority, "@") {
		return host{}, fail(reasonCredentials)
	}
	hostPart, port, herr := splitAuthority(authority)
	if herr != nil {
		return host{}, herr
	}
	if hostPart == "" {
		return host{}, fail(reasonNoHost)
	}
	if !validPort(port) {
		return host{}, fail(reasonPort)
	}

	u, err := url.Parse(raw)
	if err != nil {
		// Attribute the failure to the host when the authority alone does not parse;
		// otherwise (e.g. a bad escape in the path) the URL as a whole is malformed.
		if _, aerr := url.Parse("http://" + authority); aerr != nil {
			return host{}, fail(reasonHost)
		}
		return host{}, fail(reasonMalformed)
	}
	// Both are excluded above; kept so a future url.Parse change cannot open a hole.
	if u.User != nil {
		return host{}, fail(reasonCredentials)
	}
	if u.Host == "" || u.Hostname() == "" {
		return host{}, fail(reasonNoHost)
	}
	return v.normaliseHost(u)
}

// isSpaceOrControl matches every rune rule 1 refuses: Unicode white space (which includes
// U+00A0 and U+3000 that IDNA would otherwise map to a plain space) and control characters.
func isSpaceOrControl(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r)
}

// splitAuthority separates host and port the way Go 1.26's url.Parse does for http(s): an
// IP literal ends at its closing bracket, otherwise the first colon starts the port (a
// second colon makes the port invalid rather than moving the split).
func splitAuthority(authority string) (hostPart, port string, err *Error) {
	if strings.HasPrefix(authority, "[") {
		end := strings.LastIndexByte(authority, ']')
		if end < 0 {
			return "", "", fail(reasonHost)
		}
		hostPart, rest := authority[:end+1], authority[end+1:]
		if rest == "" {
			return hostPart, "", nil
		}
		if rest[0] != ':' {
			return "", "", fail(reasonHost)
		}
		return hostPart, rest[1:], nil
	}
	hostPart, port, _ = strings.Cut(authority, ":")
	return hostPart, port, nil
}

// validPort accepts an absent or empty port (the scheme default) or a decimal number in
// 1..65535. Leading zeros are allowed, as browsers allow them; port 0 cannot be connected to.
func validPort(port string) bool {
	if port == "" {
		return true
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n != 0
}
