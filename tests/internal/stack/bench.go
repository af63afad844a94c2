package stack

import (
	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/services/auth/authtest"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"context"
	"encoding/json"
	"errors"
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
	opts.MongoURI, opts.RedisURL, opts.DatabasePrefix, opts.LogDir = b.Datastores.MongoURI, b.Datastores.RedisURL, benchPrefix, dir
	if opts.Env == nil {
		opts.Env = map[string]string{}
	}
	opts.Env["LINKMESH_LOG_LEVEL"] = "warn"
	if b.Services, err = StartServices(ctx, opts); err != nil {
		return nil, err
	}
	return b, nil
}

// Stop stops what was started and removes the directory.
func (b *Bench) Stop() {
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/auth/register", strings.NewReader(body))
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
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated {
		return Account{}, fmt.Errorf("register: status %d %v", resp.StatusCode, err)
	}
	a := Account{UserID: out.User.ID}
	for _, ck := range resp.Cookies() {
		if ck.Name == "go_session" {
			a.Session = ck.Value
		}
	}
	if a.Session == "" || a.UserID == "" {
		return Account{}, errors.New("register: no session in the answer")
	}
	return a, nil
}

// SetQuotaLimit sets the creation quota of account userID, so a benchmark can create as
// many links as it needs.
func (b *Bench) SetQuotaLimit(ctx context.Context, userID string, limit int) error {
	mc, err := mongo.Connect(options.Client().ApplyURI(b.Datastores.MongoURI))
	if err != nil {
		return err
	}
	defer func() { _ = mc.Disconnect(context.Background()) }()
	return authtest.Restrict(ctx, mc.Database(b.Database("auth")), userID, authtest.Restriction{QuotaLimit: &limit})
}

// Database is the name of service svc's database in the bench.
func (b *Bench) Database(svc string) string { return benchPrefix + "_" + svc }

// benchPrefix names the bench's databases.
const benchPrefix = "bench"

// DiscardStream deletes a stream with everything on it, consumer groups included.
func (b *Bench) DiscardStream(ctx context.Context, name string) error {
	opts, err := redis.ParseURL(b.Datastores.RedisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	return rdb.Del(ctx, name).Err()
}
