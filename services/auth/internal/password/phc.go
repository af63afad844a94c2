package password

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Bounds on parameters read from a stored hash. A hash is our own data, but a corrupted or
// tampered one must not make one login allocate gigabytes or spin for minutes.
const (
	maxMemory  = 256 * 1024 // KiB, 256 MiB
	maxTime    = 16
	maxThreads = 16
	minSalt    = 8
	maxSalt    = 64
	minKey     = 16
	maxKey     = 64
)

// ErrMalformed is returned for a stored hash that is not a PHC argon2id string within bounds.
var ErrMalformed = errors.New("malformed argon2id hash")

// b64 is the PHC string format's base64: standard alphabet, no padding, and strict so that
// one hash has exactly one spelling.
func b64() *base64.Encoding { return base64.RawStdEncoding.Strict() }

func encode(p Params, salt, key []byte) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Time, p.Threads, b64().EncodeToString(salt), b64().EncodeToString(key))
}

// decode parses "$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<key>" strictly: fixed
// field order, plain decimal numbers, bounded parameters, canonical unpadded base64.
func decode(s string) (Params, []byte, []byte, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return Params{}, nil, nil, fmt.Errorf("%w: not a $argon2id$ string", ErrMalformed)
	}
	if v, ok := strings.CutPrefix(parts[2], "v="); !ok || v != strconv.Itoa(argon2.Version) {
		return Params{}, nil, nil, fmt.Errorf("%w: unsupported version %q", ErrMalformed, parts[2])
	}
	p, err := decodeParams(parts[3])
	if err != nil {
		return Params{}, nil, nil, err
	}
	salt, err := b64().DecodeString(parts[4])
	if err != nil || len(salt) < minSalt || len(salt) > maxSalt {
		return Params{}, nil, nil, fmt.Errorf("%w: salt", ErrMalformed)
	}
	key, err := b64().DecodeString(parts[5])
	if err != nil || len(key) < minKey || len(key) > maxKey {
		return Params{}, nil, nil, fmt.Errorf("%w: key", ErrMalformed)
	}
	p.SaltLen, p.KeyLen = uint32(len(salt)), uint32(len(key))
	return p, salt, key, nil
}

func decodeParams(s string) (Params, error) {
	fields := strings.Split(s, ",")
	if len(fields) != 3 {
		return Params{}, fmt.Errorf("%w: want m,t,p", ErrMalformed)
	}
	var vals [3]uint64
	for i, name := range []string{"m", "t", "p"} {
		v, ok := strings.CutPrefix(fields[i], name+"=")
		n, err := strconv.ParseUint(v, 10, 32)
		// ParseUint accepts leading zeros; only the canonical spelling passes.
		if !ok || err != nil || strconv.FormatUint(n, 10) != v {
			return Params{}, fmt.Errorf("%w: parameter %s", ErrMalformed, name)
		}
		vals[i] = n
	}
	m, t, p := vals[0], vals[1], vals[2]
	if p < 1 || p > maxThreads || t < 1 || t > maxTime || m < 8*p || m > maxMemory {
		return Params{}, fmt.Errorf("%w: parameters m=%d,t=%d,p=%d out of bounds", ErrMalformed, m, t, p)
	}
	return Params{Memory: uint32(m), Time: uint32(t), Threads: uint8(p)}, nil
}

// check validates parameters the service is configured with.
func (p Params) check() error {
	if p.Threads < 1 || p.Threads > maxThreads || p.Time < 1 || p.Time > maxTime ||
		p.Memory < 8*uint32(p.Threads) || p.Memory > maxMemory ||
		p.SaltLen < minSalt || p.SaltLen > maxSalt || p.KeyLen < minKey || p.KeyLen > maxKey {
		return fmt.Errorf("argon2id parameters %+v out of bounds", p)
	}
	return nil
}
