package app_test

import (
	"net/http"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp/idptest"
)

// A provider whose key set never ends (or cannot be had at all) makes an ID-token login
// answer 503 in the envelope, quickly, not 401: the caller's token is not to blame, so the
// attempt is recorded as unavailable and its unit given back. Once the keys are served
// again, the same token logs in.
func TestGoogleKeysUnavailable(t *testing.T) {
	iss := idptest.New(t)
	iss.Override("/keys", idptest.Endless)
	s := boot(t, withIssuer(iss, ""))
	tok := iss.Sign(t, iss.Claims("sub-1", "a@example.com"))
	start := time.Now()
	resp, body := s.call(t, s.anon(t), http.MethodPost, "/internal/auth/google", `{"id_token":"`+tok+`"}`)
	wantFailure(t, resp, body, 503, "identity provider unavailable")
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the login took %v", took)
	}
	if n := s.quota.Used(quota.ScopeLoginIP, clientIP); n != 0 {
		t.Fatalf("%d units counted for a login the provider failed", n)
	}
	n, _ := s.db.Collection("login_records").CountDocuments(t.Context(), bson.D{{Key: "method", Value: "google"}, {Key: "reason", Value: "unavailable"}})
	if n != 1 {
		t.Fatalf("%d unavailable google records, want 1", n)
	}
	iss.Override("/keys", nil)
	if _, err := s.google(t, tok); err != nil {
		t.Fatalf("google login once the keys are served: %v", err)
	}
}
