package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// KeySet is the key material of a deployment: a private key per service and the bundle of
// every service's certificate.
type KeySet struct {
	// Keys maps a service name to its Ed25519 private key, PKCS #8 PEM.
	Keys map[string]string
	// Certs is the PEM bundle of one self-signed certificate per service.
	Certs string
}

// GenerateKeySet makes a fresh key pair and certificate for each of services. The
// certificates only carry the public keys and names; their validity dates are not checked.
func GenerateKeySet(services ...string) (KeySet, error) {
	set := KeySet{Keys: make(map[string]string, len(services))}
	var certs bytes.Buffer
	for _, name := range services {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return KeySet{}, fmt.Errorf("generate key of %s: %w", name, err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			return KeySet{}, fmt.Errorf("encode key of %s: %w", name, err)
		}
		set.Keys[name] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
		if err != nil {
			return KeySet{}, err
		}
		now := time.Now()
		tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(100, 0, 0), KeyUsage: x509.KeyUsageDigitalSignature}
		cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
		if err != nil {
			return KeySet{}, fmt.Errorf("certificate of %s: %w", name, err)
		}
		_ = pem.Encode(&certs, &pem.Block{Type: "CERTIFICATE", Bytes: cert})
	}
	set.Certs = certs.String()
	return set, nil
}

// ParsePrivateKey reads an Ed25519 private key in PKCS #8 PEM (as `openssl genpkey -algorithm
// ed25519` and Helm's genPrivateKey "ed25519" write it): one block and nothing else.
func ParsePrivateKey(s string) (ed25519.PrivateKey, error) {
	blocks, err := pemBlocks(s)
	if err != nil {
		return nil, fmt.Errorf("internal key: %w", err)
	}
	if len(blocks) != 1 || blocks[0].Type != "PRIVATE KEY" {
		return nil, errors.New("internal key: want exactly one PEM block of type PRIVATE KEY")
	}
	key, err := x509.ParsePKCS8PrivateKey(blocks[0].Bytes)
	if err != nil {
		return nil, fmt.Errorf("internal key: %w", err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("internal key: want an Ed25519 key, got %T", key)
	}
	return priv, nil
}

// MaxCertsPerService bounds the certificates one service may have in a bundle: its current
// one and those of a key rotation (the old key still verified while the new one is rolled
// out, see the chart README's "Rotating the internal keys").
const MaxCertsPerService = 3

// ParseCertificates reads a PEM bundle of certificates, each naming its service (one of
// Calls) in its subject's common name and carrying an Ed25519 public key, and returns the
// public keys by service: one per certificate, up to MaxCertsPerService for a service, so
// that during a key rotation tokens signed with the old key and with the new one both verify.
// Validity dates and issuers are not checked: the bundle is configuration, trusted as a whole,
// and a certificate is only the conventional container of a named public key that `openssl
// req -x509` and Helm's genSelfSignedCertWithKey both write. A key found twice is refused,
// for one service (a pasted duplicate) or for two: whoever held the gateway's could name
// callers.
func ParseCertificates(s string) (map[string][]ed25519.PublicKey, error) {
	blocks, err := pemBlocks(s)
	if err != nil {
		return nil, fmt.Errorf("internal certificates: %w", err)
	}
	if len(blocks) == 0 {
		return nil, errors.New("internal certificates: none found")
	}
	pubs := make(map[string][]ed25519.PublicKey)
	for _, block := range blocks {
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("internal certificates: unexpected PEM block %q", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("internal certificates: %w", err)
		}
		name := cert.Subject.CommonName
		if _, known := Calls[name]; !known {
			return nil, fmt.Errorf("internal certificates: %q names no service", name)
		}
		pub, ok := cert.PublicKey.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("internal certificates: %q carries a %T, not an Ed25519 key", name, cert.PublicKey)
		}
		if len(pubs[name]) == MaxCertsPerService {
			return nil, fmt.Errorf("internal certificates: more than %d for %q", MaxCertsPerService, name)
		}
		for other, keys := range pubs {
			for _, p := range keys {
				if !p.Equal(pub) {
					continue
				}
				if other == name {
					return nil, fmt.Errorf("internal certificates: the same key twice for %q", name)
				}
				return nil, fmt.Errorf("internal certificates: %q and %q share a key", other, name)
			}
		}
		pubs[name] = append(pubs[name], pub)
	}
	return pubs, nil
}

// KeyID names an Ed25519 public key in a token's `kid` header: the first 12 bytes of its
// SHA-256, base64url. A verifier holding several keys of the issuer (a rotation) picks the
// one named instead of trying each.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// pemBlocks decodes s as PEM blocks with nothing but white space around and between them:
// pem.Decode alone skips text before a block and a malformed block before a good one, which
// would drop a damaged entry without a word.
func pemBlocks(s string) ([]*pem.Block, error) {
	var blocks []*pem.Block
	rest := []byte(s)
	for {
		rest = bytes.TrimLeft(rest, " \t\r\n")
		if len(rest) == 0 {
			return blocks, nil
		}
		if !bytes.HasPrefix(rest, []byte("-----BEGIN ")) {
			return nil, errors.New("text that is not PEM")
		}
		// The block ends at the first END line; decoding only that much cannot skip ahead.
		end := bytes.Index(rest, []byte("\n-----END "))
		if end < 0 {
			return nil, errors.New("a PEM block without its END line")
		}
		lineEnd := bytes.IndexByte(rest[end+1:], '\n')
		if lineEnd < 0 {
			lineEnd = len(rest) - end - 1
		}
		chunk := rest[:end+1+lineEnd]
		block, left := pem.Decode(chunk)
		if block == nil || len(bytes.TrimSpace(left)) != 0 {
			return nil, errors.New("a malformed PEM block")
		}
		blocks = append(blocks, block)
		rest = rest[len(chunk):]
	}
}
