package identity

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const secret = "0123456789abcdef0123456789abcdef"

func TestRoundTrip(t *testing.T) {
	k, _ := NewKeys(secret)
	for _, c := range []Caller{Anonymous, {UserID: "u1", Role: "moderator", Status: "active", IPHash: strings.Repeat("ab", 32), UserAgent: "curl/8", QuotaLimit: 250}} {
		tok, err := k.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.Verify(tok)
		if err != nil || got != c {
			t.Fatalf("Verify = %+v, %v; want %+v", got, err, c)
		}
	}
}

func TestRejects(t *testing.T) {
	k, _ := NewKeys(secret)
	other, _ := NewKeys(strings.Repeat("x", 32))
	good, _ := k.Sign(Caller{UserID: "u1", Role: "user"})
	forged, _ := other.Sign(Caller{UserID: "u1", Role: "super_admin"})

	expiredKeys, _ := NewKeys(secret)
	expiredKeys.now = func() time.Time { return time.Now().Add(-2 * time.Minute) }
	expired, _ := expiredKeys.Sign(Caller{UserID: "u1", Role: "user"})

	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"role": "super_admin", "sub": "u1",
		"iss": issuer, "aud": audience, "exp": time.Now().Add(time.Minute).Unix()})
	noneTok, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)

	wrongAud := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"role": "user", "sub": "u1",
		"iss": issuer, "aud": "someone-else", "exp": time.Now().Add(time.Minute).Unix()})
	wrongAudTok, _ := wrongAud.SignedString([]byte(secret))

	noExp := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"role": "user", "sub": "u1",
		"iss": issuer, "aud": audience})
	noExpTok, _ := noExp.SignedString([]byte(secret))

	anonWithSubject := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"role": RoleAnonymous, "sub": "u1",
		"iss": issuer, "aud": audience, "exp": time.Now().Add(time.Minute).Unix()})
	anonWithSubjectTok, _ := anonWithSubject.SignedString([]byte(secret))

	longLived := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"role": "user", "sub": "u1",
		"iss": issuer, "aud": audience, "iat": time.Now().Unix(), "exp": time.Now().Add(24 * time.Hour).Unix()})
	longLivedTok, _ := longLived.SignedString([]byte(secret))
	unknownRole := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"role": "root", "sub": "u1",
		"iss": issuer, "aud": audience, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix()})
	unknownRoleTok, _ := unknownRole.SignedString([]byte(secret))

	cases := map[string]string{
		"long-lived": longLivedTok, "unknown role": unknownRoleTok,
		"other secret": forged, "expired": expired, "alg none": noneTok, "wrong audience": wrongAudTok,
		"no expiry": noExpTok, "garbage": "a.b.c", "tampered": good[:len(good)-2] + "xx",
		"inconsistent": anonWithSubjectTok,
	}
	for name, tok := range cases {
		if _, err := k.Verify(tok); err == nil {
			t.Errorf("%s: token accepted", name)
		}
	}
	if _, err := NewKeys("short"); err == nil {
		t.Error("short secret accepted")
	}
}
