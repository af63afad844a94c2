package password

import (
	"context"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// "é" typed precomposed (U+00E9) or as "e" + combining acute (U+0301): one passphrase.
const (
	nfcPassphrase = "caf\u00e9-au-lait"
	nfdPassphrase = "cafe\u0301-au-lait"
)

// legacyHash is a hash of pw's bytes as typed, as versions before NFC stored them.
func legacyHash(t *testing.T, h *Hasher, pw string) string {
	t.Helper()
	salt := make([]byte, h.params.SaltLen)
	key, err := h.derive(context.Background(), pw, salt, h.params)
	if err != nil {
		t.Fatal(err)
	}
	return encode(h.params, salt, key)
}

func TestPasswordsCompareInNFC(t *testing.T) {
	h := newHasher(t, cheap())
	ctx := context.Background()
	hashOf := func(pw string) string {
		enc, err := h.Hash(ctx, pw)
		if err != nil {
			t.Fatal(err)
		}
		return enc
	}
	cases := []struct {
		name       string
		stored     string
		typed      string
		ok, rehash bool
	}{
		{"registered NFC, typed NFD", hashOf(nfcPassphrase), nfdPassphrase, true, false},
		{"registered NFD, typed NFC", hashOf(nfdPassphrase), nfcPassphrase, true, false},
		{"registered NFD, typed NFD", hashOf(nfdPassphrase), nfdPassphrase, true, false},
		{"registered NFC, typed NFC", hashOf(nfcPassphrase), nfcPassphrase, true, false},
		{"another accent is another password", hashOf(nfcPassphrase), "caf\u00e8-au-lait", false, false},
		{"the bare letter is another password", hashOf(nfcPassphrase), "cafe-au-lait", false, false},
		// A hash stored before normalization, of the NFD bytes: it still verifies with the
		// same bytes, and asks to be replaced by the NFC hash.
		{"legacy NFD hash, typed NFD", legacyHash(t, h, nfdPassphrase), nfdPassphrase, true, true},
		{"legacy NFD hash, typed wrong", legacyHash(t, h, nfdPassphrase), "cafe\u0300-au-lait", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, rehash, err := h.Check(ctx, tc.typed, tc.stored)
			if err != nil || ok != tc.ok || rehash != tc.rehash {
				t.Fatalf("Check = %v, %v, %v; want %v, %v", ok, rehash, err, tc.ok, tc.rehash)
			}
			if v, err := h.Verify(ctx, tc.typed, tc.stored); err != nil || v != tc.ok {
				t.Fatalf("Verify = %v, %v; want %v", v, err, tc.ok)
			}
		})
	}
	// The replacement of a legacy hash is the NFC one, which the NFC spelling now matches.
	fresh := hashOf(nfdPassphrase)
	if ok, rehash, err := h.Check(ctx, norm.NFC.String(nfdPassphrase), fresh); err != nil || !ok || rehash {
		t.Fatalf("the rehashed legacy password = %v, %v, %v", ok, rehash, err)
	}
}

// A hash at other parameters asks for a rehash whichever spelling matched.
func TestCheckAsksForRehashAtOtherParameters(t *testing.T) {
	ctx := context.Background()
	old := newHasher(t, Params{Memory: 32, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32})
	enc, err := old.Hash(ctx, nfcPassphrase)
	if err != nil {
		t.Fatal(err)
	}
	for _, typed := range []string{nfcPassphrase, nfdPassphrase} {
		if ok, rehash, err := newHasher(t, cheap()).Check(ctx, typed, enc); err != nil || !ok || !rehash {
			t.Errorf("Check(%q) = %v, %v, %v; want a match that needs a rehash", typed, ok, rehash, err)
		}
	}
}
