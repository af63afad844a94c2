package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// oidcIssuer is a local OpenID provider (discovery + JWKS) with a key the test generates, so
// ID-token login is exercised end to end without the internet.
type oidcIssuer struct {
	srv      *http.Server
	url      string
	key      *rsa.PrivateKey
	clientID string
}

func startOIDCIssuer(clientID string) (*oidcIssuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o := &oidcIssuer{url: "http://" + ln.Addr().String(), key: key, clientID: clientID}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": o.url, "jwks_uri": o.url + "/jwks", "authorization_endpoint": o.url + "/auth",
			"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		writeJSON(w, map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	o.srv = &http.Server{Handler: mux}
	go func() { _ = o.srv.Serve(ln) }()
	return o, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (o *oidcIssuer) Close() { _ = o.srv.Close() }

// token signs an ID token; override changes or removes (nil) claims.
func (o *oidcIssuer) token(sub, email string, override map[string]any) string {
	claims := jwt.MapClaims{
		"iss": o.url, "aud": o.clientID, "sub": sub, "email": email, "email_verified": true,
		"given_name": "Grace", "family_name": "Hopper",
		"iat": time.Now().Unix(), "exp": time.Now().Add(10 * time.Minute).Unix(),
	}
	for k, v := range override {
		if v == nil {
			delete(claims, k)
		} else {
			claims[k] = v
		}
	}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = "k1"
	s, err := t.SignedString(o.key)
	if err != nil {
		panic(err)
	}
	return s
}
