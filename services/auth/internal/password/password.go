// Package password hashes and verifies passwords with argon2id, stored as PHC strings
// ("$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>") so that the parameters can be raised later
// without invalidating existing hashes. Passwords are hashed in Unicode NFC, so one passphrase
// typed with precomposed or with combining characters is the same password.
package password

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"runtime"

	"golang.org/x/crypto/argon2"
	"golang.org/x/text/unicode/norm"
)

// Params are the argon2id cost parameters of a hash.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32 // passes
	Threads uint8
	SaltLen uint32 // bytes
	KeyLen  uint32 // bytes
}

// OWASP returns the parameters the OWASP Password Storage Cheat Sheet recommends for
// argon2id: 19 MiB, two passes, one lane.
func OWASP() Params {
	return Params{Memory: 19456, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}
}

// Hasher hashes with fixed parameters. Every hash costs Params.Memory of RAM for a few tens of
// milliseconds, so at most a bounded number run at once: a burst of logins queues instead of
// exhausting memory.
type Hasher struct {
	params Params
	slots  chan struct{}
}

// NewHasher returns a Hasher; concurrency ≤ 0 means one slot per CPU.
func NewHasher(p Params, concurrency int) (*Hasher, error) {
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("password parameters: %w", err)
	}
	if concurrency <= 0 {
		concurrency = runtime.GOMAXPROCS(0)
	}
	return &Hasher{params: p, slots: make(chan struct{}, concurrency)}, nil
}

// Hash returns the PHC string of pw, in NFC, under a fresh random salt.
func (h *Hasher) Hash(ctx context.Context, pw string) (string, error) {
	salt := make([]byte, h.params.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("read salt: %w", err)
	}
	key, err := h.derive(ctx, norm.NFC.String(pw), salt, h.params)
	if err != nil {
		return "", err
	}
	return encode(h.params, salt, key), nil
}

// Verify reports whether pw matches encoded; see Check.
func (h *Hasher) Verify(ctx context.Context, pw, encoded string) (bool, error) {
	ok, _, err := h.Check(ctx, pw, encoded)
	return ok, err
}

// Check reports whether pw matches encoded, using the parameters written in encoded, and
// whether encoded should be replaced by a fresh Hash of pw. A malformed or absurd encoded
// string is an error, never a panic or an unbounded allocation.
//
// pw is compared in NFC. Hashes stored before passwords were normalized hold the bytes as
// typed, so a pw that is not in NFC is also tried as it is; such a match asks for a rehash,
// which stores the NFC form. This costs a second derivation only for input that is not NFC.
func (h *Hasher) Check(ctx context.Context, pw, encoded string) (ok, rehash bool, err error) {
	p, salt, want, err := decode(encoded)
	if err != nil {
		return false, false, err
	}
	nfc := norm.NFC.String(pw)
	if ok, err := h.matches(ctx, nfc, salt, want, p); err != nil || ok {
		return ok, ok && p != h.params, err
	}
	if nfc == pw {
		return false, false, nil
	}
	ok, err = h.matches(ctx, pw, salt, want, p)
	return ok, ok, err
}

// NeedsRehash reports whether encoded was made with other parameters than the Hasher's, so a
// successful login can store a hash at the current cost.
func (h *Hasher) NeedsRehash(encoded string) bool {
	p, _, _, err := decode(encoded)
	return err != nil || p != h.params
}

func (h *Hasher) matches(ctx context.Context, pw string, salt, want []byte, p Params) (bool, error) {
	got, err := h.derive(ctx, pw, salt, p)
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

func (h *Hasher) derive(ctx context.Context, pw string, salt []byte, p Params) ([]byte, error) {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a hashing slot: %w", ctx.Err())
	}
	defer func() { <-h.slots }()
	return argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, p.KeyLen), nil
}
