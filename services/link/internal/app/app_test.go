package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/identity"
	pkgservice "github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/link/internal/app"
	"github.com/linkmesh/linkmesh/services/link/internal/config"
)

type service struct {
	*testenv.Booted
	quota *testenv.QuotaServer
}

// boot starts the link service in-process through the production boot path against the
// real datastores and a fake quota service granting two creations per key.
func boot(t *testing.T) *service {
	t.Helper()
	qs := testenv.NewQuotaServer(t, 2)
	cfg := &config.Config{}
	b := testenv.Boot(t, pkgservice.For(pkgconfig.Link, cfg, app.Wire), func() {
		cfg.QuotaURL, cfg.BaseURL = qs.URL, "https://sho.rt"
		cfg.WebhookKey = pkgconfig.Secret("test-webhook-key-of-at-least-32-characters")
	})
	return &service{Booted: b, quota: qs}
}

const create = "/internal/links/"

func created(t *testing.T, r testenv.Response) link.Created {
	t.Helper()
	var c link.Created
	if r.Status != http.StatusCreated || json.Unmarshal([]byte(r.Body), &c) != nil || !link.PlausibleCode(c.ShortCode) {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	return c
}

// Anonymous creations take a unit of the caller's key from the quota service, only when the
// request is acceptable, and answer 429 with the quota's Retry-After once it is spent.
func TestAnonymousCreationCountsQuota(t *testing.T) {
	s := boot(t)
	anon := s.Anonymous(t)
	for _, refused := range []struct {
		body, msg string
		status    int
	}{
		{`{"url":"http://10.0.0.1/x"}`, "url must not point to a private or internal address", 400}, // its unit is given back
		{`{"url":"https://93.184.216.34/x","custom_code":"mine"}`, "custom_code requires an account", 403},
		{`{"url":"https://93.184.216.34/x","expiration_days":31}`, "expiration_days must be between 1 and 30", 400},
	} {
		s.Do(t, anon, "POST", create, refused.body).WantFailure(t, refused.status, refused.msg)
	}
	if n := s.quota.Used(quota.ScopeAnonymousCreate, testenv.ClientKey); n != 0 {
		t.Fatalf("refused requests took %d units", n)
	}
	c := created(t, s.Do(t, anon, "POST", create, `{"url":"https://93.184.216.34/a"}`))
	if c.ShortURL != "https://sho.rt/"+c.ShortCode || c.DestinationURL != "https://93.184.216.34/a" {
		t.Fatalf("created %+v", c)
	}
	created(t, s.Do(t, anon, "POST", create, `{"url":"https://93.184.216.34/b"}`))
	if n := s.quota.Used(quota.ScopeAnonymousCreate, testenv.ClientKey); n != 2 {
		t.Fatalf("two creations took %d units", n)
	}
	r := s.Do(t, anon, "POST", create, `{"url":"https://93.184.216.34/c"}`)
	r.WantFailure(t, 429, "anonymous link quota exceeded")
	if r.Header.Get("Retry-After") != "840" {
		t.Fatalf("Retry-After = %q, want the quota's 840", r.Header.Get("Retry-After"))
	}
	// Another client's key has its own window.
	other := s.As(t, identity.Caller{IPHash: "another-client-key"})
	created(t, s.Do(t, other, "POST", create, `{"url":"https://93.184.216.34/d"}`))

	info := s.Do(t, anon, "GET", "/internal/links/"+c.ShortCode+"/info", "")
	if info.Status != 200 {
		t.Fatalf("info: %d %s", info.Status, info.Body)
	}
}

// Signed-in callers count against their account's own limit, carried in the token, and may
// choose a code; a taken one is 409 and gives its unit back.
func TestRegisteredCreation(t *testing.T) {
	s := boot(t)
	user := s.As(t, identity.Caller{UserID: "u1", Role: "user", Status: "active", QuotaLimit: 2})
	code := testenv.Name("own")
	c := created(t, s.Do(t, user, "POST", create, `{"url":"https://93.184.216.34/own","expiration_days":365,"custom_code":"`+code+`"}`))
	if c.ShortCode != code {
		t.Fatalf("custom code not kept: %+v", c)
	}
	s.Do(t, user, "POST", create, `{"url":"https://93.184.216.34/own","custom_code":"`+code+`"}`).
		WantFailure(t, 409, "custom_code is already taken")
	if seen := s.quota.Seen(); len(seen) != 2 || seen[0] != "u1" || s.quota.Used(quota.ScopeUserCreate, "u1") != 1 {
		t.Fatalf("registered creations reserved %v; want the account's window, the refused one given back", seen)
	}
	created(t, s.Do(t, user, "POST", create, `{"url":"https://93.184.216.34/two"}`))
	r := s.Do(t, user, "POST", create, `{"url":"https://93.184.216.34/three"}`)
	r.WantFailure(t, 429, "monthly link quota exceeded")
	// The limit travels with every request: a raised quota_limit applies at once.
	raised := s.As(t, identity.Caller{UserID: "u1", Role: "user", Status: "active", QuotaLimit: 3})
	created(t, s.Do(t, raised, "POST", create, `{"url":"https://93.184.216.34/three"}`))
	r = s.Do(t, user, "GET", "/internal/links/"+code+"/resolve", "")
	var res link.Resolved
	if r.Status != 200 || json.Unmarshal([]byte(r.Body), &res) != nil || res.DestinationURL != "https://93.184.216.34/own" || res.Expired(c.CreatedAt) {
		t.Fatalf("resolve: %d %s", r.Status, r.Body)
	}
}

// With the quota service gone an anonymous creation is a 503, and nothing is stored.
func TestCreationWithoutQuotaService(t *testing.T) {
	s := boot(t)
	s.quota.Close()
	s.Do(t, s.Anonymous(t), "POST", create, `{"url":"https://93.184.216.34/x"}`).WantFailure(t, 503, "quota service unavailable")
	n, err := s.DB.Collection("links").CountDocuments(t.Context(), map[string]any{})
	if err != nil || n != 0 {
		t.Fatalf("links stored: %d %v", n, err)
	}
}

// Every internal route needs the gateway's token.
func TestRoutesNeedInternalToken(t *testing.T) {
	s := boot(t)
	for _, r := range [][2]string{{"POST", create}, {"GET", "/internal/links/abc1234/resolve"}, {"GET", "/internal/links/abc1234/info"}} {
		s.Do(t, t.Context(), r[0], r[1], `{}`).WantFailure(t, 401, identity.MsgTokenRequired)
	}
	s.Do(t, s.Anonymous(t), "GET", "/internal/links/nope123/resolve", "").WantFailure(t, 404, link.MsgNotFound)
}

// A MongoDB outage answers 503 with the envelope, never a 500, and gives the creation's quota
// unit back: the boot path classifies the store's plain error once, in the error handler.
func TestDatastoreOutageIs503(t *testing.T) {
	mongoURI, _ := testenv.URIs(t)
	u, err := url.Parse(mongoURI)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	qs := testenv.NewQuotaServer(t, 5)
	cfg := &config.Config{}
	b := testenv.Boot(t, pkgservice.For(pkgconfig.Link, cfg, app.Wire), func() {
		cfg.QuotaURL = qs.URL
		cfg.URI = pkgconfig.Secret("mongodb://" + proxy.Addr() + "/")
		cfg.WebhookKey = pkgconfig.Secret("test-webhook-key-of-at-least-32-characters")
	})
	anon := b.Anonymous(t)
	created(t, b.Do(t, anon, "POST", create, `{"url":"https://93.184.216.34/before"}`))

	proxy.Cut()
	if r := b.Do(t, anon, "POST", create, `{"url":"https://93.184.216.34/during"}`); r.Status != 503 {
		t.Logf("service logs:\n%s", b.Logs.String())
		r.WantFailure(t, 503, "mongodb unavailable")
	}
	if n := qs.Used(quota.ScopeAnonymousCreate, testenv.ClientKey); n != 1 {
		t.Fatalf("%d units held after a failed creation, want the 1 of the stored link", n)
	}
	b.Do(t, anon, "GET", "/internal/links/nope123/info", "").WantFailure(t, 503, "mongodb unavailable")

	proxy.Restore()
	created(t, b.Do(t, anon, "POST", create, `{"url":"https://93.184.216.34/after"}`))
}
