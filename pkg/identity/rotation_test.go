package identity

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// A deployment's key material at one step of a rotation: each service's private key and the
// bundle every service verifies with.
type rotationStep struct {
	name  string
	keys  map[string]string
	certs string
}

// TestRotationProcedure runs the rotation the chart README documents, for all six services at
// once: (1) the new certificates join the bundle, (2) every service signs with its new key,
// (3) the old certificates leave. During each rollout, pods of the step before and of the step
// after run side by side, so every pod of either step must accept every token a pod of either
// step signs — a service's own caller tokens and the tokens it passes on. No call fails.
func TestRotationProcedure(t *testing.T) {
	old, next := mustSet(t, services...), mustSet(t, services...)
	steps := []rotationStep{
		{"before", old.Keys, old.Certs},
		{"1: new certificates added", old.Keys, old.Certs + next.Certs},
		{"2: new keys in use", next.Keys, old.Certs + next.Certs},
		{"3: old certificates removed", next.Keys, next.Certs},
	}
	fleet := func(s rotationStep) map[string]*Keys {
		f := map[string]*Keys{}
		for _, svc := range services {
			k, err := NewKeys(svc, s.keys[svc], s.certs)
			if err != nil {
				t.Fatalf("step %q: %s does not start: %v", s.name, svc, err)
			}
			f[svc] = k
		}
		return f
	}
	caller := Caller{UserID: "u1", Role: RoleUser, Status: "active"}
	for i := 1; i < len(steps); i++ {
		pods := []map[string]*Keys{fleet(steps[i-1]), fleet(steps[i])}
		for _, signers := range pods {
			for _, verifiers := range pods {
				for _, callee := range Calls[Gateway] {
					tok, err := signers[Gateway].SignCaller(caller, callee)
					if err != nil {
						t.Fatal(err)
					}
					if got, err := verifiers[callee].Verify(tok); err != nil || got != caller {
						t.Errorf("rollout to %q: %s refused the gateway's token: %v", steps[i].name, callee, err)
					}
					// The callee passes the call on to each of its own peers.
					for _, next := range Calls[callee] {
						onward, err := signers[callee].passOn(tok, next)
						if err != nil {
							t.Fatal(err)
						}
						if _, err := verifiers[next].Verify(onward); err != nil {
							t.Errorf("rollout to %q: %s refused what %s passed on: %v", steps[i].name, next, callee, err)
						}
					}
				}
			}
		}
	}
	// Skipping step 2's wait — old certificates removed while pods still sign with old keys —
	// is what the procedure prevents: those tokens are refused.
	before, after := fleet(steps[0]), fleet(steps[3])
	tok, _ := before[Gateway].SignCaller(caller, "link")
	if _, err := after["link"].Verify(tok); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("a token of a removed key: %v, want refused", err)
	}
}

// A token without a kid (signed by a release that set none) verifies against each of the
// issuer's keys; one whose kid names another service's key is refused.
func TestKeyIDs(t *testing.T) {
	old, next := mustSet(t, services...), mustSet(t, services...)
	bundle := old.Certs + next.Certs
	link, err := NewKeys("link", next.Keys["link"], bundle)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ParsePrivateKey(old.Keys[Gateway])
	if err != nil {
		t.Fatal(err)
	}
	gw, _ := NewKeys(Gateway, old.Keys[Gateway], bundle)
	tok, err := gw.SignCaller(Caller{UserID: "u1", Role: RoleUser}, "link")
	if err != nil {
		t.Fatal(err)
	}
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, &claims{})
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Header["kid"] != KeyID(priv.Public().(ed25519.PublicKey)) {
		t.Fatalf("kid %v", parsed.Header["kid"])
	}
	resign := func(kid any) string {
		cl := *parsed.Claims.(*claims)
		t2 := jwt.NewWithClaims(jwt.SigningMethodEdDSA, cl)
		if kid != nil {
			t2.Header["kid"] = kid
		}
		s, err := t2.SignedString(priv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := link.Verify(resign(nil)); err != nil {
		t.Errorf("no kid: %v", err)
	}
	linkPriv, _ := ParsePrivateKey(next.Keys["link"])
	for name, kid := range map[string]any{"another service's key": KeyID(linkPriv.Public().(ed25519.PublicKey)), "unknown": "nope", "not a string": 7} {
		if _, err := link.Verify(resign(kid)); err == nil {
			t.Errorf("kid %s: accepted", name)
		}
	}
}
