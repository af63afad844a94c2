package idp_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp/idptest"
)

// misbehaviours of a provider's server, each with what the error must say (a regexp).
var misbehaviours = []struct {
	name    string
	handler http.HandlerFunc
	says    string
}{
	{"declared oversize", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(idp.MaxDocumentSize+1))
		_, _ = w.Write(make([]byte, idp.MaxDocumentSize+1))
	}, "exceeds 1048576"},
	{"endless body", idptest.Endless, "exceeds 1048576 bytes"},
	{"never answers", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "Client.Timeout exceeded|deadline exceeded"},
	{"trickles", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"keys":[`))
		for r.Context().Err() == nil {
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte(" "))
			time.Sleep(20 * time.Millisecond)
		}
	}, "Client.Timeout exceeded|deadline exceeded"},
	{"server error", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, strings.Repeat("x", 4<<20), http.StatusInternalServerError)
	}, "answered 500 Internal Server Error"},
}

// A discovery document or key set that is huge, endless, slow or missing fails the call
// within the timeout, having read at most MaxDocumentSize, as ErrUnavailable (the caller's
// token is not to blame); once the provider behaves, tokens verify again.
func TestProviderAnswersAreBounded(t *testing.T) {
	const timeout = time.Second
	for _, path := range []string{discovery, "/keys"} {
		for _, m := range misbehaviours {
			t.Run(path+" "+m.name, func(t *testing.T) {
				iss := idptest.New(t)
				iss.Override(path, m.handler)
				v := idp.New(idp.Config{Issuer: iss.URL, ClientID: idptest.ClientID, Timeout: timeout, RetryAfter: -1})
				tok := iss.Sign(t, iss.Claims("s", "a@example.com"))
				start := time.Now()
				_, err := v.Verify(context.Background(), tok)
				took := time.Since(start)
				if !errors.Is(err, idp.ErrUnavailable) || errors.Is(err, idp.ErrInvalidToken) || !regexp.MustCompile(m.says).MatchString(err.Error()) {
					t.Fatalf("Verify = %v; want ErrUnavailable saying %q", err, m.says)
				}
				if took > timeout+time.Second {
					t.Fatalf("Verify took %v with a timeout of %v", took, timeout)
				}
				if len(err.Error()) > 1024 {
					t.Fatalf("the error carries %d bytes of the answer", len(err.Error()))
				}
				iss.Override(path, nil)
				// go-oidc's RemoteKeySet signals its finished download before it lets go of
				// it (jwks.go keysFromRemote: inflight.done, then inflight = nil under the
				// lock), so a Verify right after a failure may still be handed that failure
				// once; the next call downloads afresh. Recovery is what is asserted.
				deadline := time.Now().Add(15 * time.Second)
				for {
					_, err := v.Verify(context.Background(), tok)
					if err == nil {
						break
					}
					if !errors.Is(err, idp.ErrUnavailable) || time.Now().After(deadline) {
						t.Fatalf("Verify once the provider behaves: %v", err)
					}
					time.Sleep(100 * time.Millisecond)
				}
			})
		}
	}
}

// An oversized body is refused without waiting for the timeout: the bound is on bytes.
func TestEndlessKeySetFailsBeforeTheTimeout(t *testing.T) {
	iss := idptest.New(t)
	iss.Override("/keys", idptest.Endless)
	v := idp.New(idp.Config{Issuer: iss.URL, ClientID: idptest.ClientID, JWKSURL: iss.JWKSURL(), Timeout: time.Minute})
	start := time.Now()
	_, err := v.Verify(context.Background(), iss.Sign(t, iss.Claims("s", "a@example.com")))
	if !errors.Is(err, idp.ErrUnavailable) || time.Since(start) > 10*time.Second {
		t.Fatalf("Verify = %v after %v; want ErrUnavailable long before the 1m timeout", err, time.Since(start))
	}
}
