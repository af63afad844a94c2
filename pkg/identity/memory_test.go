package identity

import (
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// A verification is remembered only until the earliest expiry in the token's chain: a
// passed-on token whose inner token has expired is refused although it verified before.
func TestRememberedVerificationEndsWithTheChain(t *testing.T) {
	gw, link, quota := keysOf(t, Gateway), keysOf(t, "link"), keysOf(t, "quota")
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := t0
	for _, k := range []*Keys{gw, link, quota} {
		k.now = func() time.Time { return at }
	}
	caller := Caller{UserID: "u1", Role: RoleUser, Status: "active", QuotaLimit: 100}
	fromGateway, err := gw.SignCaller(caller, "link")
	if err != nil {
		t.Fatal(err)
	}
	at = t0.Add(50 * time.Second)
	onward, err := link.passOn(fromGateway, "quota")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := quota.Verify(onward); err != nil || got != caller {
		t.Fatalf("at +50 s: %+v, %v", got, err)
	}
	// The gateway's token expired at +60 s (+5 s leeway); the one passing it on lives on.
	at = t0.Add(66 * time.Second)
	if got, err := quota.Verify(onward); err == nil {
		t.Fatalf("at +66 s the chain's first token has expired, yet %+v was accepted", got)
	}
}

// Tokens signed within one second differ in every claim that differs, and a new second
// gives a new token.
func TestRememberedSignaturesKeepTheirClaims(t *testing.T) {
	gw, link := keysOf(t, Gateway), keysOf(t, "link")
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	gw.now = func() time.Time { return at }
	link.now = gw.now
	base := Caller{UserID: "u1", Role: RoleUser, Status: "active", IPHash: "h", UserAgent: "ua", QuotaLimit: 100}
	variants := []Caller{base,
		{UserID: "u2", Role: RoleUser, Status: "active", IPHash: "h", UserAgent: "ua", QuotaLimit: 100},
		{UserID: "u1", Role: RoleModerator, Status: "active", IPHash: "h", UserAgent: "ua", QuotaLimit: 100},
		{UserID: "u1", Role: RoleUser, Status: "suspended", IPHash: "h", UserAgent: "ua", QuotaLimit: 100},
		{UserID: "u1", Role: RoleUser, Status: "active", IPHash: "h2", UserAgent: "ua", QuotaLimit: 100},
		{UserID: "u1", Role: RoleUser, Status: "active", IPHash: "h", UserAgent: "ua2", QuotaLimit: 100},
		{UserID: "u1", Role: RoleUser, Status: "active", IPHash: "h", UserAgent: "ua", QuotaLimit: 101},
		{UserID: "u1", Role: RoleUser, Status: "active", IPHash: "h", UserAgent: "ua", QuotaLimit: 100, TokenID: "t1"},
	}
	seen := map[string]bool{}
	for _, c := range variants {
		tok, err := gw.SignCaller(c, "link")
		if err != nil {
			t.Fatal(err)
		}
		if seen[tok] {
			t.Fatalf("%+v got a token signed for another caller", c)
		}
		seen[tok] = true
		if got, err := link.Verify(tok); err != nil || got != c {
			t.Fatalf("%+v verified as %+v, %v", c, got, err)
		}
	}
	first, _ := gw.SignCaller(base, "link")
	if other, _ := gw.SignCaller(base, "moderation"); other == first {
		t.Fatal("a token for link was given for moderation")
	}
	at = at.Add(time.Second)
	if next, _ := gw.SignCaller(base, "link"); next == first {
		t.Fatal("the token of the second before was given again")
	}
}

// Every claim of a caller is part of what a remembered signature is remembered by: a caller
// that differs from another in any field, one at a time, gets a token of its own, which
// verifies as itself. The fields are found by reflection, so a field added to Caller is
// covered without a line here (a session id once was not, and a caller got another
// session's token within the second).
func TestRememberedSignaturesCoverEveryField(t *testing.T) {
	gw, link := keysOf(t, Gateway), keysOf(t, "link")
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	gw.now = func() time.Time { return at }
	link.now = gw.now
	base := Caller{UserID: "u1", Role: RoleUser, Status: "active", IPHash: "h", UserAgent: "ua", QuotaLimit: 100}
	first, err := gw.SignCaller(base, "link")
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(base)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "Service" || name == "UserID" || name == "Role" { // not a user's caller, or checked above
			continue
		}
		c := base
		f := reflect.ValueOf(&c).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Int:
			f.SetInt(f.Int() + 1)
		default:
			t.Fatalf("Caller.%s is a %s: teach this test to vary it", name, f.Kind())
		}
		tok, err := gw.SignCaller(c, "link")
		if err != nil {
			t.Fatal(err)
		}
		if tok == first {
			t.Errorf("a caller differing in %s got the remembered token of another", name)
		}
		if got, err := link.Verify(tok); err != nil || got != c {
			t.Errorf("a caller differing in %s verified as %+v, %v", name, got, err)
		}
	}
}

// A token verified from a buffer its server then reuses is remembered by its own bytes: the
// next token written into the buffer is verified for itself, also after the memory has grown.
func TestRememberedTokenOwnsItsBytes(t *testing.T) {
	gw, link := keysOf(t, Gateway), keysOf(t, "link")
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	gw.now = func() time.Time { return at }
	link.now = gw.now
	a, b := Caller{UserID: "ua", Role: RoleUser, Status: "active"}, Caller{UserID: "ub", Role: RoleUser, Status: "active"}
	tokA, _ := gw.SignCaller(a, "link")
	tokB, _ := gw.SignCaller(b, "link")
	if len(tokA) != len(tokB) {
		t.Fatalf("tokens of %d and %d bytes", len(tokA), len(tokB))
	}
	buf := []byte(tokA)
	if got, err := link.Verify(unsafe.String(&buf[0], len(buf))); err != nil || got != a {
		t.Fatalf("%+v, %v", got, err)
	}
	copy(buf, tokB)      // the server's next request
	for i := range 300 { // the memory grows and rehashes what it holds
		tok, _ := gw.SignCaller(Caller{UserID: fmt.Sprintf("u%03d", i), Role: RoleUser}, "link")
		if _, err := link.Verify(tok); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := link.Verify(tokB); err != nil || got != b {
		t.Fatalf("the token of %+v verified as %+v, %v", b, got, err)
	}
}

// A service passing on two different tokens within one second sends two different tokens.
func TestRememberedPassOnKeepsWhatItPasses(t *testing.T) {
	gw, link := keysOf(t, Gateway), keysOf(t, "link")
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	gw.now = func() time.Time { return at }
	link.now = gw.now
	quota := keysOf(t, "quota")
	quota.now = gw.now
	for _, c := range []Caller{{UserID: "u1", Role: RoleUser}, {UserID: "u2", Role: RoleUser}} {
		in, _ := gw.SignCaller(c, "link")
		out, err := link.passOn(in, "quota")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := quota.Verify(out); err != nil || got != c {
			t.Fatalf("passed on for %+v, verified as %+v, %v", c, got, err)
		}
	}
}
