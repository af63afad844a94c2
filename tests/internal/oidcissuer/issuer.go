// Package oidcissuer is a local OpenID provider for the tests: discovery, JWKS, ID tokens
// signed with a key generated at start, and an authorization endpoint that signs a browser in
// at once as the person the test chose (implicit flow, the token in the redirect's fragment),
// so ID-token login is exercised end to end without the internet.
package oidcissuer

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is a running provider.
type Issuer struct {
	// URL is the issuer (and the base of its endpoints); ClientID the audience it signs for.
	URL, ClientID string
	// RedirectURI, when set, is the one redirect_uri the client registered: any other is
	// refused, as a real provider does.
	RedirectURI string

	srv *http.Server
	key *rsa.PrivateKey

	mu   sync.Mutex
	next *person // who the authorization endpoint signs in; nil refuses
}

type person struct{ sub, email string }

// Start listens on a loopback port.
func Start(clientID string) (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o := &Issuer{URL: "http://" + ln.Addr().String(), key: key, ClientID: clientID}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": o.URL, "jwks_uri": o.URL + "/jwks", "authorization_endpoint": o.AuthorizationURL(),
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
	mux.HandleFunc("GET /authorize", o.authorize)
	o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = o.srv.Serve(ln) }()
	return o, nil
}

// AuthorizationURL is where a browser signs in.
func (o *Issuer) AuthorizationURL() string { return o.URL + "/authorize" }

// Close stops the provider.
func (o *Issuer) Close() { _ = o.srv.Close() }

// SignInAs makes the authorization endpoint sign browsers in as sub with email, as a person
// who picks that account at the provider would.
func (o *Issuer) SignInAs(sub, email string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next = &person{sub, email}
}

// Refuse makes the authorization endpoint answer access_denied, as when a person cancels.
func (o *Issuer) Refuse() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next = nil
}

// authorize answers an implicit-flow request for an ID token: back to redirect_uri with the
// token (carrying the request's nonce) and state in the fragment, or with an error there.
func (o *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || back.Scheme == "" || q.Get("client_id") != o.ClientID || (o.RedirectURI != "" && q.Get("redirect_uri") != o.RedirectURI) {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	answer := url.Values{"state": {q.Get("state")}}
	o.mu.Lock()
	who := o.next
	o.mu.Unlock()
	switch {
	case !strings.Contains(" "+q.Get("response_type")+" ", " id_token "):
		answer.Set("error", "unsupported_response_type")
	case q.Get("nonce") == "":
		answer.Set("error", "invalid_request")
	case who == nil:
		answer.Set("error", "access_denied")
	default:
		answer.Set("id_token", o.Token(who.sub, who.email, map[string]any{"nonce": q.Get("nonce")}))
	}
	back.Fragment = ""
	http.Redirect(w, r, back.String()+"#"+answer.Encode(), http.StatusFound)
}

// Token signs an ID token for sub and email; override changes or removes (nil) claims.
func (o *Issuer) Token(sub, email string, override map[string]any) string {
	claims := jwt.MapClaims{
		"iss": o.URL, "aud": o.ClientID, "sub": sub, "email": email, "email_verified": true,
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

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
