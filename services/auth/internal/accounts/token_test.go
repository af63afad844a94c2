package accounts

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"testing"
)

func TestSessionTokens(t *testing.T) {
	seen := map[string]bool{}
	b64url := regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
	for range 1000 {
		tok, hash, err := NewSessionToken()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || len(raw) != 32 || !b64url.MatchString(tok) {
			t.Fatalf("token %q is not 256 bits of unpadded base64url", tok)
		}
		sum := sha256.Sum256([]byte(tok))
		if hash != hex.EncodeToString(sum[:]) || hash != HashToken(tok) || len(hash) != 64 {
			t.Fatalf("hash %q is not the hex SHA-256 of the token", hash)
		}
		if hash == tok {
			t.Fatal("the stored form is the token itself")
		}
		if seen[tok] {
			t.Fatal("a token repeated")
		}
		seen[tok] = true
	}
}

func TestEmailKeyHidesTheAddress(t *testing.T) {
	k := emailKey("ada@example.com")
	if len(k) != 64 || k == "ada@example.com" || k != emailKey("ada@example.com") || k == emailKey("bob@example.com") {
		t.Fatalf("emailKey = %q", k)
	}
}
