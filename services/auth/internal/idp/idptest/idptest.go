// Package idptest runs a local OpenID Connect issuer for tests: discovery document, JWKS and
// RS256-signed ID tokens from an RSA key generated per issuer. Nothing leaves 127.0.0.1.
package idptest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// ClientID is the audience the issuer's tokens carry by default.
const ClientID = "linkmesh-test-client.apps.example"

// Issuer is a running local issuer.
type Issuer struct {
	// URL is the issuer URL (and the base of its discovery document).
	URL string
	// Key signs the tokens; KeyID is its kid in the JWKS.
	Key   *rsa.PrivateKey
	KeyID string

	mu          sync.Mutex
	hits        map[string]int
	failNext    int // discovery requests still to answer 500
	discoveryOn bool
	delay       time.Duration
	overrides   map[string]http.HandlerFunc
}

// New starts an issuer that is stopped when the test ends.
func New(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &Issuer{Key: key, KeyID: "test-key-1", hits: map[string]int{}, discoveryOn: true}
	srv := httptest.NewServer(http.HandlerFunc(iss.serve))
	t.Cleanup(srv.Close)
	iss.URL = srv.URL
	return iss
}

// JWKSURL is where the issuer serves its keys.
func (i *Issuer) JWKSURL() string { return i.URL + "/keys" }

// Hits returns how often path was requested.
func (i *Issuer) Hits(path string) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.hits[path]
}

// FailDiscovery makes the next n discovery requests answer 500.
func (i *Issuer) FailDiscovery(n int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.failNext = n
}

// DelayDiscovery makes discovery answer only after d (or when the client gives up).
func (i *Issuer) DelayDiscovery(d time.Duration) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.delay = d
}

// Override makes path answer with h from now on, e.g. to send a huge body or none at all;
// requests are still counted.
func (i *Issuer) Override(path string, h http.HandlerFunc) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.overrides == nil {
		i.overrides = map[string]http.HandlerFunc{}
	}
	i.overrides[path] = h
}

// Endless answers 200 with a JSON body that never ends, sent as fast as it is read.
func Endless(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"keys":[],"padding":"`))
	chunk := []byte(strings.Repeat("a", 32<<10))
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// DisableDiscovery makes the discovery document answer 404, as for an issuer without one.
func (i *Issuer) DisableDiscovery() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.discoveryOn = false
}

func (i *Issuer) serve(w http.ResponseWriter, r *http.Request) {
	i.mu.Lock()
	i.hits[r.URL.Path]++
	fail := i.failNext > 0 && r.URL.Path == "/.well-known/openid-configuration"
	if fail {
		i.failNext--
	}
	discoveryOn, delay, override := i.discoveryOn, i.delay, i.overrides[r.URL.Path]
	i.mu.Unlock()
	if override != nil {
		override(w, r)
		return
	}
	if delay > 0 && r.URL.Path == "/.well-known/openid-configuration" {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case fail:
		http.Error(w, "down", http.StatusInternalServerError)
	case r.URL.Path == "/.well-known/openid-configuration" && discoveryOn:
		writeJSON(w, map[string]any{
			"issuer": i.URL, "jwks_uri": i.JWKSURL(),
			"authorization_endpoint": i.URL + "/auth", "token_endpoint": i.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public"},
		})
	case r.URL.Path == "/keys":
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &i.Key.PublicKey, KeyID: i.KeyID, Algorithm: string(jose.RS256), Use: "sig"},
		}})
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Claims returns the claims of a valid token for subject and email, which tests change.
func (i *Issuer) Claims(subject, email string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": i.URL, "aud": ClientID, "sub": subject,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"email": email, "email_verified": true,
		"given_name": "Grace", "family_name": "Hopper", "name": "Grace Hopper",
	}
}

// Sign signs claims with the issuer's key.
func (i *Issuer) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	return SignWith(t, i.Key, i.KeyID, claims)
}

// SignWith signs claims with any RSA key under kid, e.g. to forge a token.
func SignWith(t testing.TB, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
