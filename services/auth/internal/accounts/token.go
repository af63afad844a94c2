package accounts

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// TokenBytes is the entropy of a session token: 256 bits.
const TokenBytes = 32

// maxTokenLength bounds what Validate and Logout look up; real tokens are 43 characters.
const maxTokenLength = 256

// NewSessionToken returns a fresh random token and the hash under which it is stored.
func NewSessionToken() (token, hash string, err error) {
	var b [TokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("read session token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token), nil
}

// HashToken is the stored form of a token: hex SHA-256. A plain hash suffices because the
// token has 256 bits of entropy; a database leak then yields no usable session.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// emailKey is the quota key of an e-mail: its hex SHA-256, so the quota service never sees
// the address.
func emailKey(email string) string {
	sum := sha256.Sum256([]byte(email))
	return hex.EncodeToString(sum[:])
}

// pairKey is the quota key of a pair of e-mail and client identity key: the hex SHA-256 of
// the e-mail's key and the client's, so that it is as short as one of them (the quota
// service bounds key length) and never shows the address. The e-mail's key has a fixed
// length, so no two pairs share a key.
func pairKey(email, client string) string {
	sum := sha256.Sum256([]byte(emailKey(email) + client))
	return hex.EncodeToString(sum[:])
}
