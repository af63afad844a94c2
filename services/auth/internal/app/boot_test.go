package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/logging"
	pkgservice "github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/auth/internal/app"
	"github.com/linkmesh/linkmesh/services/auth/internal/config"
)

const (
	secret = "component-test-secret-0123456789abcdef"
	// clientIP is the identity key the gateway would send for one client.
	clientIP = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
)

// syncBuffer collects the service's logs; the server writes from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type service struct {
	base   string
	client *auth.Client
	keys   *identity.Keys
	db     *mongo.Database
	quota  *quotaServer
	logs   *syncBuffer
}

// boot starts the service in-process on a free port against the real datastores and a fake
// quota service (3 failures per window), and stops it when the test ends.
func boot(t *testing.T, configure ...func(*config.Config)) *service {
	t.Helper()
	mongoURI, redisURL := testenv.URIs(t)
	db := testenv.Mongo(t)
	keys, err := identity.NewKeys(secret)
	if err != nil {
		t.Fatal(err)
	}
	qs := newQuotaServer(t, keys, 3)
	cfg := config.Config{
		Service:    pkgconfig.Service{LogLevel: "info", InternalSecret: secret},
		Mongo:      pkgconfig.Mongo{URI: pkgconfig.Secret(mongoURI), Database: db.Name()},
		Redis:      pkgconfig.Redis{URL: pkgconfig.Secret(redisURL)},
		Peers:      pkgconfig.Peers{QuotaURL: qs.URL},
		SessionTTL: time.Hour,

		LoginRecordRetention: 2160 * time.Hour,
	}
	for _, f := range configure {
		f(&cfg)
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	rt := pkgservice.Runtime{Logger: logging.New(logs, app.Name, "info"), TracerProvider: noop.NewTracerProvider()}
	a, err := app.New(ctx, cfg, rt)
	if err != nil {
		cancel()
		t.Fatalf("app.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the internal secret reached the logs")
		}
	})
	base := "http://" + ln.Addr().String()
	hc := httpclient.New(httpclient.Options{Service: "auth", BaseURL: base, TracerProvider: noop.NewTracerProvider()})
	return &service{base: base, client: auth.New(hc), keys: keys, db: db, quota: qs, logs: logs}
}

// as returns a context carrying an internal token for caller, as the gateway signs it.
func (s *service) as(t *testing.T, caller identity.Caller) context.Context {
	t.Helper()
	if caller.IPHash == "" {
		caller.IPHash = clientIP
	}
	if caller.UserAgent == "" {
		caller.UserAgent = "component-test/1.0"
	}
	if caller.UserID == "" {
		caller.Role = identity.RoleAnonymous
	}
	ctx, err := s.keys.WithCaller(context.Background(), caller)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

func (s *service) anon(t *testing.T) context.Context { return s.as(t, identity.Caller{}) }

// call sends a raw request with an internal token (if ctx carries one), for what the typed
// client does not show: statuses and headers.
func (s *service) call(t *testing.T, ctx context.Context, method, path string, body string) (*http.Response, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tok := identity.TokenFromContext(ctx); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// wantFailure checks status and the one-field envelope.
func wantFailure(t *testing.T, resp *http.Response, body string, status int, msg string) {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal([]byte(body), &env); err != nil || len(env) != 1 || env["error"] != msg || resp.StatusCode != status {
		t.Fatalf("got %d %s; want %d {\"error\":%q}", resp.StatusCode, body, status, msg)
	}
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
