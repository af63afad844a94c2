package server

import "github.com/linkmesh/linkmesh/pkg/errs"

// MaxIdempotencyKey bounds an Idempotency-Key.
const MaxIdempotencyKey = 255

// CheckIdempotencyKey is the one check of an Idempotency-Key header's value, by the service
// that honours it: 1–255 visible ASCII characters (empty means none was sent).
func CheckIdempotencyKey(k string) error {
	if len(k) > MaxIdempotencyKey {
		return errs.Invalid("Idempotency-Key must be at most %d characters", MaxIdempotencyKey)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return errs.Invalid("Idempotency-Key must be visible ASCII characters")
		}
	}
	return nil
}
