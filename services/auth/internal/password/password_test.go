package password

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

// cheap keeps the tests fast; the encoding and rules do not depend on the cost.
func cheap() Params { return Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32} }

func newHasher(t *testing.T, p Params) *Hasher {
	t.Helper()
	h, err := NewHasher(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHashRoundTripWithOWASPParameters(t *testing.T) {
	h := newHasher(t, OWASP())
	ctx := context.Background()
	enc, err := h.Hash(ctx, "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	phc := regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	if !phc.MatchString(enc) {
		t.Fatalf("hash %q is not the OWASP PHC string", enc)
	}
	for pw, want := range map[string]bool{
		"correct horse battery staple":  true,
		"correct horse battery staple ": false,
		"Correct horse battery staple":  false,
		"":                              false,
	} {
		ok, err := h.Verify(ctx, pw, enc)
		if err != nil || ok != want {
			t.Errorf("Verify(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
	again, _ := h.Hash(ctx, "correct horse battery staple")
	if again == enc {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	if h.NeedsRehash(enc) {
		t.Fatal("a hash at the current parameters needs no rehash")
	}
}

// Verification reads the parameters from the string, so hashes made before a cost increase
// keep working, and they are reported for rehashing.
func TestVerifyUsesParametersFromTheString(t *testing.T) {
	ctx := context.Background()
	old := newHasher(t, Params{Memory: 32, Time: 3, Threads: 2, SaltLen: 8, KeyLen: 16})
	enc, err := old.Hash(ctx, "password-1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=32,t=3,p=2$") {
		t.Fatalf("hash %q", enc)
	}
	current := newHasher(t, cheap())
	if ok, err := current.Verify(ctx, "password-1", enc); err != nil || !ok {
		t.Fatalf("verify with other parameters = %v, %v", ok, err)
	}
	if !current.NeedsRehash(enc) {
		t.Fatal("a hash at other parameters must need a rehash")
	}
	// Changing a parameter in the string changes the derived key: it is really read.
	tampered := strings.Replace(enc, "t=3", "t=4", 1)
	if ok, err := current.Verify(ctx, "password-1", tampered); err != nil || ok {
		t.Fatalf("verify with a changed t = %v, %v; want false", ok, err)
	}
}

func TestDecodeRejectsMalformedAndAbsurdStrings(t *testing.T) {
	h := newHasher(t, cheap())
	good, err := h.Hash(context.Background(), "password-1")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, "$")
	salt, key := parts[4], parts[5]
	with := func(params string) string { return "$argon2id$v=19$" + params + "$" + salt + "$" + key }
	cases := map[string]string{
		"empty":             "",
		"garbage":           "not a hash",
		"bcrypt":            "$2a$10$abcdefghijklmnopqrstuuJ7bTQvNkLVGG7mW7RZP2zGC9Lf4e1i",
		"argon2i":           strings.Replace(good, "argon2id", "argon2i", 1),
		"no leading dollar": strings.TrimPrefix(good, "$"),
		"extra field":       good + "$x",
		"missing key":       "$argon2id$v=19$m=64,t=1,p=1$" + salt,
		"version 16":        strings.Replace(good, "v=19", "v=16", 1),
		"no version":        strings.Replace(good, "v=19$", "", 1),
		"huge memory":       with("m=4294967295,t=1,p=1"),
		"memory over bound": with("m=262145,t=1,p=1"),
		"memory below 8p":   with("m=15,t=1,p=2"),
		"zero time":         with("m=64,t=0,p=1"),
		"huge time":         with("m=64,t=4294967295,p=1"),
		"zero threads":      with("m=64,t=1,p=0"),
		"threads over 255":  with("m=64,t=1,p=256"),
		"params reordered":  with("t=1,m=64,p=1"),
		"params missing":    with("m=64,t=1"),
		"params extra":      with("m=64,t=1,p=1,k=2"),
		"leading zero":      with("m=064,t=1,p=1"),
		"plus sign":         with("m=+64,t=1,p=1"),
		"negative":          with("m=-64,t=1,p=1"),
		"overflow":          with("m=99999999999999999999,t=1,p=1"),
		"space":             with("m=64, t=1,p=1"),
		"salt not base64":   "$argon2id$v=19$m=64,t=1,p=1$!!!!$" + key,
		"salt padded":       "$argon2id$v=19$m=64,t=1,p=1$" + salt + "==$" + key,
		"salt too short":    "$argon2id$v=19$m=64,t=1,p=1$AAAA$" + key,
		"salt too long":     "$argon2id$v=19$m=64,t=1,p=1$" + strings.Repeat("A", 200) + "$" + key,
		"key too short":     "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$AAAA",
		"key too long":      "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + strings.Repeat("A", 200),
		"key non-canonical": "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key[:len(key)-1] + "B",
		"url-safe alphabet": "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + strings.Repeat("_", 43),
		"null byte":         good + "\x00",
		"only dollars":      "$$$$$",
		"very long":         strings.Repeat("$argon2id", 10000),
	}
	for name, enc := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			ok, err := h.Verify(context.Background(), "password-1", enc)
			if ok || !errors.Is(err, ErrMalformed) {
				t.Fatalf("Verify(%q) = %v, %v; want ErrMalformed", enc, ok, err)
			}
			if time.Since(start) > time.Second {
				t.Fatal("rejecting a malformed hash took over a second: it was computed")
			}
			if !h.NeedsRehash(enc) {
				t.Fatal("a malformed hash must need a rehash")
			}
		})
	}
	if ok, err := h.Verify(context.Background(), "password-1", good); err != nil || !ok {
		t.Fatalf("the unmodified hash must verify: %v %v", ok, err)
	}
}

func TestNewHasherRejectsBadParameters(t *testing.T) {
	for _, p := range []Params{
		{},
		{Memory: 64, Time: 1, Threads: 1, SaltLen: 4, KeyLen: 32},
		{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 8},
		{Memory: 1 << 30, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32},
	} {
		if _, err := NewHasher(p, 1); err == nil {
			t.Errorf("NewHasher(%+v) accepted", p)
		}
	}
}

// A caller that gives up while every slot is busy is not kept waiting.
func TestHashingSlotsAreBounded(t *testing.T) {
	h, err := NewHasher(cheap(), 1)
	if err != nil {
		t.Fatal(err)
	}
	h.slots <- struct{}{} // the only slot is taken
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.Hash(ctx, "password-1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Hash with no free slot = %v; want the context's deadline", err)
	}
	<-h.slots
	if _, err := h.Hash(context.Background(), "password-1"); err != nil {
		t.Fatalf("Hash with a free slot: %v", err)
	}
}
