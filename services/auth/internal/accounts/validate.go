package accounts

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

// Limits of account fields.
const (
	MaxEmailLength    = 254 // RFC 5321 path limit
	MinPasswordLength = 8
	MaxPasswordLength = 128
	MaxNameLength     = 100
)

// Registration is a validated register request.
type Registration struct {
	Email, Password, FirstName, LastName string
}

// Credentials are a validated login request.
type Credentials struct {
	Email, Password string
}

// NormalizeEmail trims, lower-cases and NFC-normalizes an address, as it is stored and
// compared everywhere: an internationalized address typed with combining characters is the
// same account as its precomposed spelling.
func NormalizeEmail(s string) string { return norm.NFC.String(strings.ToLower(strings.TrimSpace(s))) }

// normalizePassword is the form a new password is hashed in (the hasher normalizes too).
func normalizePassword(pw string) string { return norm.NFC.String(pw) }

// ValidateRegistration checks a register request field by field, in body order, and returns
// the normalized registration or a 400 naming the first bad field.
func ValidateRegistration(req auth.RegisterRequest) (Registration, error) {
	email, err := ValidateEmail(req.Email)
	if err != nil {
		return Registration{}, err
	}
	if err := ValidatePassword(req.Password); err != nil {
		return Registration{}, err
	}
	first, err := validateName("first_name", req.FirstName)
	if err != nil {
		return Registration{}, err
	}
	last, err := validateName("last_name", req.LastName)
	if err != nil {
		return Registration{}, err
	}
	return Registration{Email: email, Password: normalizePassword(req.Password), FirstName: first, LastName: last}, nil
}

// ValidateLogin checks that both fields are present. It deliberately does not check the
// e-mail's syntax or the password's length: any other answer than 401 would tell a guesser
// something, and no account can match a value registration would have refused. The password
// stays as typed: the hasher compares it in NFC, and as typed against hashes stored before
// passwords were normalized.
func ValidateLogin(req auth.LoginRequest) (Credentials, error) {
	email := NormalizeEmail(req.Email)
	if email == "" {
		return Credentials{}, errs.Invalid("email is required")
	}
	if req.Password == "" {
		return Credentials{}, errs.Invalid("password is required")
	}
	return Credentials{Email: email, Password: req.Password}, nil
}

// ValidateEmail normalizes s and checks that it is one bare address (no display name,
// comments or angle brackets) of at most MaxEmailLength characters.
func ValidateEmail(s string) (string, error) {
	email := NormalizeEmail(s)
	if email == "" {
		return "", errs.Invalid("email is required")
	}
	if utf8.RuneCountInString(email) > MaxEmailLength {
		return "", errs.Invalid("email must be at most %d characters", MaxEmailLength)
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Name != "" || addr.Address != email || !strings.Contains(email, "@") {
		return "", errs.Invalid("email must be a valid e-mail address")
	}
	return email, nil
}

// ValidatePassword checks the length in characters (runes) of the NFC form, not bytes, so
// that a passphrase in any script, however it was typed, gets the same limits.
func ValidatePassword(pw string) error {
	if n := utf8.RuneCountInString(normalizePassword(pw)); n < MinPasswordLength || n > MaxPasswordLength {
		return errs.Invalid("password must be between %d and %d characters", MinPasswordLength, MaxPasswordLength)
	}
	return nil
}

func validateName(field, s string) (string, error) {
	name := strings.TrimSpace(s)
	switch {
	case name == "":
		return "", errs.Invalid("%s is required", field)
	case utf8.RuneCountInString(name) > MaxNameLength:
		return "", errs.Invalid("%s must be at most %d characters", field, MaxNameLength)
	case strings.ContainsFunc(name, unicode.IsControl):
		return "", errs.Invalid("%s must not contain control characters", field)
	}
	return name, nil
}
