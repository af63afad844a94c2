package links

import (
	"crypto/rand"
	"math/big"
	"strings"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
)

const (
	base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	// GeneratedCodeLength gives 62^7 ≈ 3.5e12 codes, so collisions are rare and retried.
	GeneratedCodeLength = 7
	customMin           = 3
)

// reserved are words a custom code may not take, because they are, or may become, routes.
var reserved = map[string]bool{
	"api": true, "health": true, "healthz": true, "readyz": true, "metrics": true, "admin": true,
	"login": true, "logout": true, "register": true, "signup": true, "auth": true, "static": true,
	"assets": true, "dashboard": true, "user": true, "users": true, "links": true, "reports": true,
	"internal": true, "docs": true, "openapi": true, "www": true, "app": true, "settings": true,
}

// NewCode returns a random base62 code from the CSPRNG.
func NewCode() (string, error) {
	var b strings.Builder
	max := big.NewInt(int64(len(base62)))
	for range GeneratedCodeLength {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b.WriteByte(base62[n.Int64()])
	}
	return b.String(), nil
}

// checkCustomCode explains why code cannot be chosen, or returns "".
func checkCustomCode(code string) string {
	switch {
	case len(code) < customMin || !link.PlausibleCode(code):
		return "custom_code must be 3-32 characters of A-Z, a-z, 0-9, _ and -"
	case reserved[strings.ToLower(code)]:
		return "custom_code is a reserved word"
	}
	return ""
}
