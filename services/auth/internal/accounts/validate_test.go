package accounts

import (
	"strings"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

func TestValidateRegistration(t *testing.T) {
	good := auth.RegisterRequest{Email: "ada@example.com", Password: "correct-horse", FirstName: "Ada", LastName: "Lovelace"}
	with := func(f func(*auth.RegisterRequest)) auth.RegisterRequest { r := good; f(&r); return r }
	cases := []struct {
		name string
		req  auth.RegisterRequest
		want string // "" = accepted
	}{
		{"valid", good, ""},
		{"email trimmed and lower-cased", with(func(r *auth.RegisterRequest) { r.Email = "  Ada@Example.COM " }), ""},
		{"email missing", with(func(r *auth.RegisterRequest) { r.Email = "" }), "email is required"},
		{"email blank", with(func(r *auth.RegisterRequest) { r.Email = "   " }), "email is required"},
		{"email without at", with(func(r *auth.RegisterRequest) { r.Email = "ada.example.com" }), "email must be a valid e-mail address"},
		{"email without domain", with(func(r *auth.RegisterRequest) { r.Email = "ada@" }), "email must be a valid e-mail address"},
		{"email with display name", with(func(r *auth.RegisterRequest) { r.Email = "Ada <ada@example.com>" }), "email must be a valid e-mail address"},
		{"email in angle brackets", with(func(r *auth.RegisterRequest) { r.Email = "<ada@example.com>" }), "email must be a valid e-mail address"},
		{"email with comment", with(func(r *auth.RegisterRequest) { r.Email = "ada@example.com (Ada)" }), "email must be a valid e-mail address"},
		{"two addresses", with(func(r *auth.RegisterRequest) { r.Email = "a@example.com, b@example.com" }), "email must be a valid e-mail address"},
		{"email with space", with(func(r *auth.RegisterRequest) { r.Email = "a da@example.com" }), "email must be a valid e-mail address"},
		{"email with newline", with(func(r *auth.RegisterRequest) { r.Email = "ada@example.com\nBcc: x@y.z" }), "email must be a valid e-mail address"},
		{"email of 254", with(func(r *auth.RegisterRequest) {
			r.Email = strings.Repeat("a", 64) + "@" + strings.Repeat("b", 185) + ".com"
		}), ""},
		{"email of 255", with(func(r *auth.RegisterRequest) {
			r.Email = strings.Repeat("a", 64) + "@" + strings.Repeat("b", 186) + ".com"
		}), "email must be at most 254 characters"},
		{"password of 7", with(func(r *auth.RegisterRequest) { r.Password = "1234567" }), "password must be between 8 and 128 characters"},
		{"password of 8", with(func(r *auth.RegisterRequest) { r.Password = "12345678" }), ""},
		{"password of 128", with(func(r *auth.RegisterRequest) { r.Password = strings.Repeat("p", 128) }), ""},
		{"password of 129", with(func(r *auth.RegisterRequest) { r.Password = strings.Repeat("p", 129) }), "password must be between 8 and 128 characters"},
		// Characters, not bytes: 8 two-byte runes pass, 128 of them too, 129 do not.
		{"password of 8 runes", with(func(r *auth.RegisterRequest) { r.Password = strings.Repeat("é", 8) }), ""},
		{"password of 4 runes in 8 bytes", with(func(r *auth.RegisterRequest) { r.Password = strings.Repeat("é", 4) }), "password must be between 8 and 128 characters"},
		{"password of 128 runes", with(func(r *auth.RegisterRequest) { r.Password = strings.Repeat("密", 128) }), ""},
		{"password of 129 runes", with(func(r *auth.RegisterRequest) { r.Password = strings.Repeat("密", 129) }), "password must be between 8 and 128 characters"},
		{"password empty", with(func(r *auth.RegisterRequest) { r.Password = "" }), "password must be between 8 and 128 characters"},
		{"first name missing", with(func(r *auth.RegisterRequest) { r.FirstName = "" }), "first_name is required"},
		{"first name blank", with(func(r *auth.RegisterRequest) { r.FirstName = " \t " }), "first_name is required"},
		{"last name missing", with(func(r *auth.RegisterRequest) { r.LastName = "" }), "last_name is required"},
		{"name of 100 runes", with(func(r *auth.RegisterRequest) { r.LastName = strings.Repeat("ß", 100) }), ""},
		{"name of 101 runes", with(func(r *auth.RegisterRequest) { r.FirstName = strings.Repeat("ß", 101) }), "first_name must be at most 100 characters"},
		{"name with control", with(func(r *auth.RegisterRequest) { r.LastName = "Love\x00lace" }), "last_name must not contain control characters"},
		{"first bad field wins", auth.RegisterRequest{Email: "x", Password: "y"}, "email must be a valid e-mail address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := ValidateRegistration(tc.req)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if reg.Email != NormalizeEmail(tc.req.Email) || reg.FirstName != strings.TrimSpace(tc.req.FirstName) {
					t.Fatalf("not normalized: %+v", reg)
				}
				return
			}
			if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Message != tc.want {
				t.Fatalf("got %v, want 400 %q", err, tc.want)
			}
		})
	}
}

func TestValidateLogin(t *testing.T) {
	cases := []struct {
		req  auth.LoginRequest
		want string
	}{
		{auth.LoginRequest{Email: " Ada@Example.com ", Password: "x"}, ""},
		// Syntax and length are not checked: the answer must be the same 401 as for a wrong
		// password.
		{auth.LoginRequest{Email: "not-an-address", Password: strings.Repeat("p", 500)}, ""},
		{auth.LoginRequest{Email: "", Password: "x"}, "email is required"},
		{auth.LoginRequest{Email: "  ", Password: "x"}, "email is required"},
		{auth.LoginRequest{Email: "a@example.com"}, "password is required"},
	}
	for _, tc := range cases {
		creds, err := ValidateLogin(tc.req)
		if tc.want == "" {
			if err != nil || creds.Email != strings.ToLower(strings.TrimSpace(tc.req.Email)) {
				t.Errorf("%+v: %+v, %v", tc.req, creds, err)
			}
			continue
		}
		if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Message != tc.want {
			t.Errorf("%+v: got %v, want 400 %q", tc.req, err, tc.want)
		}
	}
}

func TestTruncateKeepsRunesWhole(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{{"abc", 5, "abc"}, {"abcdef", 3, "abc"}, {"ééé", 2, "éé"}, {"", 0, ""}, {"a", 0, ""}} {
		if got := truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// E-mails and passwords are compared in NFC: "é" as U+00E9 and as "e" + U+0301 are one
// character of one address or passphrase.
func TestUnicodeNormalization(t *testing.T) {
	const nfc, nfd = "\u00e9", "e\u0301"
	emails := []struct{ in, want string }{
		{"Jos" + nfd + "@Example.com", "jos" + nfc + "@example.com"},
		{" JOS" + nfc + "@example.com ", "jos" + nfc + "@example.com"},
		{"JOSE\u0301@EXAMPLE.COM", "jos" + nfc + "@example.com"}, // upper-case E + combining acute
		{"\u212a@example.com", "k@example.com"},                  // KELVIN SIGN
	}
	for _, tc := range emails {
		if got := NormalizeEmail(tc.in); got != tc.want {
			t.Errorf("NormalizeEmail(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got, err := ValidateEmail(tc.in); err != nil || got != tc.want {
			t.Errorf("ValidateEmail(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if creds, err := ValidateLogin(auth.LoginRequest{Email: tc.in, Password: "x"}); err != nil || creds.Email != tc.want {
			t.Errorf("ValidateLogin(%q) e-mail = %q, %v; want %q", tc.in, creds.Email, err, tc.want)
		}
	}
	passwords := []struct {
		name, pw, stored string // stored "" = refused
	}{
		// 8 characters typed as 16 runes (NFD): within the limits, hashed as 8 NFC runes.
		{"8 NFD characters", strings.Repeat(nfd, 8), strings.Repeat(nfc, 8)},
		{"128 NFD characters", strings.Repeat(nfd, 128), strings.Repeat(nfc, 128)},
		{"4 NFD characters in 8 runes", strings.Repeat(nfd, 4), ""},
		{"129 NFC characters", strings.Repeat(nfc, 129), ""},
	}
	for _, tc := range passwords {
		reg, err := ValidateRegistration(auth.RegisterRequest{Email: "a@example.com", Password: tc.pw, FirstName: "A", LastName: "B"})
		switch {
		case tc.stored == "" && err == nil:
			t.Errorf("%s: accepted", tc.name)
		case tc.stored != "" && (err != nil || reg.Password != tc.stored):
			t.Errorf("%s: password %q, %v; want %q", tc.name, reg.Password, err, tc.stored)
		}
	}
	// A login keeps the password as typed: hashes stored before normalization hold those bytes.
	if creds, _ := ValidateLogin(auth.LoginRequest{Email: "a@example.com", Password: nfd}); creds.Password != nfd {
		t.Errorf("login password = %q, want it as typed", creds.Password)
	}
}
