package stack

import (
	"bytes"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/services/auth/authtest"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Bench is a whole stack in a temporary directory, for a benchmark: the datastores and the
// six services, logging warnings only.
type Bench struct {
	Dir        string
	Datastores *Datastores
	Services   *Services

	mongo *mongo.Client
	redis *redis.Client
}

// StartBench starts a Bench for the named benchmark. opts needs BinDir and may add Env and
// Wrap; the datastores, the database prefix and the log directory are filled in.
func StartBench(ctx context.Context, name string, opts ServicesOptions) (_ *Bench, err error) {
	if opts.BinDir, err = filepath.Abs(opts.BinDir); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "linkmesh-"+name+"-")
	if err != nil {
		return nil, err
	}
	b := &Bench{Dir: dir}
	defer func() {
		if err != nil {
			b.Stop()
		}
	}()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if b.Datastores, err = StartDatastores(ctx, filepath.Join(dir, "data"), log); err != nil {
		return nil, err
	}
	if b.mongo, err = mongo.Connect(options.Client().ApplyURI(b.Datastores.MongoURI)); err != nil {
		return nil, err
	}
	ropts, err := redis.ParseURL(b.Datastores.RedisURL)
	if err != nil {
		return nil, err
	}
	b.redis = redis.NewClient(ropts)
	opts.MongoURI, opts.RedisURL, opts.DatabasePrefix, opts.LogDir = b.Datastores.MongoURI, b.Datastores.RedisURL, benchPrefix, dir
	if opts.Env == nil {
		opts.Env = map[string]string{}
	}
	opts.Env["LINKMESH_LOG_LEVEL"] = "warn"
	// Benchmarks register their accounts from one client; the window is not what they measure.
	if _, set := opts.Env["LINKMESH_REGISTER_LIMIT"]; !set {
		opts.Env["LINKMESH_REGISTER_LIMIT"] = "1000000"
	}
	// They also flood one link from one client and count every click (exactly, through
	// crashes): the click budget would leave all but 30 out.
	if _, set := opts.Env["LINKMESH_CLICK_BUDGET"]; !set {
		opts.Env["LINKMESH_CLICK_BUDGET"] = "0"
	}
	// And their accounts create links at once, without a mail to open first.
	if _, set := opts.Env["LINKMESH_EMAIL_VERIFICATION"]; !set {
		opts.Env["LINKMESH_EMAIL_VERIFICATION"] = "off"
	}
	if b.Services, err = StartServices(ctx, opts); err != nil {
		return nil, err
	}
	return b, nil
}

// Stop stops what was started and removes the directory.
func (b *Bench) Stop() {
	if b.mongo != nil {
		_ = b.mongo.Disconnect(context.Background())
	}
	if b.redis != nil {
		_ = b.redis.Close()
	}
	if b.Services != nil {
		b.Services.Stop()
	}
	if b.Datastores != nil {
		b.Datastores.Stop()
	}
	if os.Getenv("LINKMESH_BENCH_KEEP") == "" {
		_ = os.RemoveAll(b.Dir)
	}
}

// Account is a registered account's session on a stack.
type Account struct {
	UserID, Session string
}

// Register signs up email through the gateway at base and returns the new account with its
// session cookie's value.
func Register(ctx context.Context, base, email string) (Account, error) {
	body := fmt.Sprintf(`{"email":%q,"password":"bench-password","first_name":"B","last_name":"O"}`, email)
	return session(ctx, base+"/api/auth/register", body, http.StatusCreated)
}

// Login signs in through the gateway at base and returns the account with its session
// cookie's value.
func Login(ctx context.Context, base, email, password string) (Account, error) {
	return session(ctx, base+"/api/auth/login", fmt.Sprintf(`{"email":%q,"password":%q}`, email, password), http.StatusOK)
}

// session posts body to url, an answer that starts a session, and returns the account.
func session(ctx context.Context, url, body string, want int) (Account, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return Account{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Account{}, err
	}
	defer resp.Body.Close()
	var out struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != want {
		return Account{}, fmt.Errorf("%s: status %d %v", url, resp.StatusCode, err)
	}
	a := Account{UserID: out.User.ID}
	for _, ck := range resp.Cookies() {
		if ck.Name == "go_session" {
			a.Session = ck.Value
		}
	}
	if a.Session == "" || a.UserID == "" {
		return Account{}, fmt.Errorf("%s: no session in the answer", url)
	}
	return a, nil
}

// SetQuotaLimit sets the creation quota of account userID, so a benchmark can create as
// many links as it needs.
func (b *Bench) SetQuotaLimit(ctx context.Context, userID string, limit int) error {
	return authtest.Restrict(ctx, b.DB("auth"), userID, authtest.Restriction{QuotaLimit: &limit})
}

// DB is service svc's database in the bench ("scratch" for one no service uses).
func (b *Bench) DB(svc string) *mongo.Database { return b.mongo.Database(benchPrefix + "_" + svc) }

// benchPrefix names the bench's databases.
const benchPrefix = "bench"

// DiscardStream deletes a stream with everything on it, consumer groups included, once
// its producers have stopped adding to it (its length held still for a second).
func (b *Bench) DiscardStream(ctx context.Context, name string) error {
	last := int64(-1)
	for {
		n, err := b.redis.XLen(ctx, name).Result()
		if err != nil {
			return err
		}
		if n == last {
			return b.redis.Del(ctx, name).Err()
		}
		last = n
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Shorten creates a link to dest through the gateway gw; decorate adds the caller's
// identity (a session cookie, a client address). It returns the short code and how long
// the answer took.
func Shorten(ctx context.Context, hc *http.Client, gw, dest string, decorate func(*http.Request)) (string, time.Duration, error) {
	body, _ := json.Marshal(map[string]string{"url": dest})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, gw+"/api/links/shorten", bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	decorate(req)
	t0 := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	msg, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(t0)
	if err != nil {
		return "", 0, err
	}
	var out struct {
		ShortCode string `json:"short_code"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(msg, &out) != nil {
		return "", 0, fmt.Errorf("shorten: status %d: %s", resp.StatusCode, msg)
	}
	return out.ShortCode, took, nil
}

// WithSession decorates a request with the session cookie of an account.
func WithSession(session string) func(*http.Request) {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "go_session", Value: session}) }
}

// OwnerClicks reads the owner's total_clicks from the dashboard.
func OwnerClicks(ctx context.Context, gw, session string) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gw+"/api/user/dashboard", nil)
	req.AddCookie(&http.Cookie{Name: "go_session", Value: session})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var d struct {
		TotalClicks int64 `json:"total_clicks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("dashboard: status %d %v", resp.StatusCode, err)
	}
	return d.TotalClicks, nil
}

// Answer is what a service said to Send.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Send makes one request to base+path with hc: a JSON body when body is set, the given
// headers. A transport failure is an error, for the caller to judge.
func Send(hc *http.Client, base, method, path, body string, header map[string]string) (Answer, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		return Answer{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, err
}

// Redis is the bench's Redis, for a benchmark that reads what the services left there.
func (b *Bench) Redis() *redis.Client { return b.redis }
