package urlcheck

import "strings"

// The reasons spelled out literally, so that a changed message fails the tests: they are
// part of the API contract, not an implementation detail.
const (
	wantRequired    = "url is required"
	wantTooLong     = "url must be at most 2048 characters"
	wantSpaces      = "url must not contain spaces or control characters"
	wantScheme      = "url must use http or https"
	wantNoHost      = "url must be an absolute URL with a host"
	wantCredentials = "url must not contain user credentials"
	wantPort        = "url has an invalid port"
	wantHost        = "url has an invalid host"
	wantInternal    = "url must not point to a private or internal address"
	wantSelf        = "url must not point to this service"
	accepted        = ""
)

// syntaxCases covers rules 1 and 2: presence, length, characters, scheme, host presence,
// credentials and ports.
func syntaxCases() []checkCase {
	return []checkCase{
		{"empty", "", wantRequired},
		{"spaces only", "   ", wantRequired},
		{"tab and newline only", "\t\n", wantRequired},
		{"too long", "https://example.com/" + strings.Repeat("a", MaxLength), wantTooLong},
		{"leading space", " https://example.com/", wantSpaces},
		{"trailing newline", "https://example.com/\n", wantSpaces},
		{"space in host", "https://exa mple.com/", wantSpaces},
		{"tab in host", "http://127.0.0\t.1/", wantSpaces},
		{"NUL in path", "https://example.com/\x00", wantSpaces},
		{"DEL in path", "https://example.com/\x7f", wantSpaces},
		{"C1 control", "https://example.com/\u0085", wantSpaces},
		{"no-break space", "https://example.com/\u00a0", wantSpaces},
		{"ideographic space in host", "http://127.0.0.1\u3000/", wantSpaces},

		{"ftp scheme", "ftp://example.com/", wantScheme},
		{"javascript scheme", "javascript:alert(1)", wantScheme},
		{"data scheme", "data:text/html,hi", wantScheme},
		{"file scheme", "file:///etc/passwd", wantScheme},
		{"no scheme", "example.com/path", wantScheme},
		{"scheme-relative", "//example.com/", wantScheme},
		{"httpx scheme", "httpx://example.com/", wantScheme},
		{"bad escape in path", "https://example.com/%zz", "url is not a valid URL"},
		{"upper-case scheme", "HTTPS://EXAMPLE.COM/", accepted},
		{"mixed-case scheme", "hTtP://example.com", accepted},

		{"opaque http", "http:example.com", wantNoHost},
		{"single slash", "http:/example.com", wantNoHost},
		{"triple slash", "http:///example.com", wantNoHost},
		{"nothing after slashes", "http://", wantNoHost},
		{"port without host", "http://:80/", wantNoHost},

		{"user and password", "http://user:pass@example.com/", wantCredentials},
		{"user only", "http://user@example.com/", wantCredentials},
		{"empty user-info", "http://@example.com/", wantCredentials},
		{"host-looking user-info", "http://example.com@127.0.0.1/", wantCredentials},
		{"public user-info private host", "http://8.8.8.8:80@10.0.0.1/", wantCredentials},
		{"backslash before at", "http://example.com\\@127.0.0.1/", wantCredentials},

		{"letters in port", "http://example.com:abc/", wantPort},
		{"port too large", "http://example.com:65536/", wantPort},
		{"port zero", "http://example.com:0/", wantPort},
		{"two ports", "http://example.com:80:80/", wantPort},
		{"signed port", "http://example.com:+80/", wantPort},
		{"bad port on IPv6", "http://[2606:4700::1]:x/", wantPort},
		{"empty port", "http://example.com:/", accepted},
		{"leading-zero port", "http://example.com:0080/", accepted},
		{"max port", "http://example.com:65535/", accepted},
		{"port path query fragment", "http://example.com:8080/path?q=1#frag", accepted},
		{"bad escape in query is kept", "https://example.com/?q=%zz", accepted},
	}
}
