package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
	"github.com/linkmesh/linkmesh/pkg/identity"
	pkgservice "github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/auth/internal/app"
	"github.com/linkmesh/linkmesh/services/auth/internal/config"
)

// clientIP is the identity key the gateway would send for one client.
const clientIP = testenv.ClientKey

type service struct {
	*testenv.Booted
	client *auth.Client
	keys   *identity.Keys
	db     *mongo.Database
	quota  *testenv.QuotaServer
	peers  *peers
}

// boot starts the service in-process through the production boot path against the real
// datastores, a fake quota service (3 failures per window) and fake moderation and link
// services (see peers), and stops it when the test ends.
func boot(t *testing.T, configure ...func(*config.Config)) *service {
	t.Helper()
	keys := testenv.Keys(t, identity.Gateway)
	qs := testenv.NewQuotaServer(t, 3)
	ps := newPeers(t)
	cfg := &config.Config{}
	b := testenv.Boot(t, pkgservice.For(pkgconfig.Auth, cfg, app.Wire), func() {
		cfg.QuotaURL, cfg.SessionTTL = qs.URL, time.Hour
		cfg.ModerationURL, cfg.LinkURL = ps.URL, ps.URL
		for _, f := range configure {
			f(cfg)
		}
	})
	hc := httpclient.New(httpclient.Options{Service: "auth", BaseURL: b.URL, TracerProvider: noop.NewTracerProvider()})
	return &service{Booted: b, client: auth.New(hc), keys: keys, db: b.DB, quota: qs, peers: ps}
}

// as returns a context carrying an internal token for caller, as the gateway signs it.
func (s *service) as(t *testing.T, caller identity.Caller) context.Context { return s.As(t, caller) }

func (s *service) anon(t *testing.T) context.Context { return s.Anonymous(t) }

// call sends a raw request with an internal token (if ctx carries one), for what the typed
// client does not show: statuses and headers.
func (s *service) call(t *testing.T, ctx context.Context, method, path string, body string) (*http.Response, string) {
	t.Helper()
	r := s.Do(t, ctx, method, path, body)
	return &http.Response{StatusCode: r.Status, Header: r.Header}, r.Body
}

// wantFailure checks status and the one-field envelope.
func wantFailure(t *testing.T, resp *http.Response, body string, status int, msg string) {
	t.Helper()
	testenv.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}.WantFailure(t, status, msg)
}

// setUser writes fields of a user straight into the database, as the moderation path would.
func (s *service) setUser(t *testing.T, id string, set bson.D) {
	t.Helper()
	res, err := s.db.Collection("users").UpdateOne(context.Background(), bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: set}})
	if err != nil || res.MatchedCount != 1 {
		t.Fatalf("update user %s: %v", id, err)
	}
}

// userDoc reads a stored user as a raw document.
func (s *service) userDoc(t *testing.T, filter bson.D) bson.M {
	t.Helper()
	var d bson.M
	if err := s.db.Collection("users").FindOne(context.Background(), filter).Decode(&d); err != nil {
		t.Fatalf("find user %v: %v", filter, err)
	}
	return d
}

func register(t *testing.T, s *service, email string) auth.Session {
	t.Helper()
	sess, err := s.client.Register(s.anon(t), auth.RegisterRequest{Email: email, Password: "correct-horse",
		FirstName: "Ada", LastName: "Lovelace"})
	if err != nil {
		t.Fatalf("register %s: %v", email, err)
	}
	return sess
}

func withBootstrap(email, pw string) func(*config.Config) {
	return func(c *config.Config) {
		c.BootstrapAdminEmail, c.BootstrapAdminPassword = email, pkgconfig.Secret(pw)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
