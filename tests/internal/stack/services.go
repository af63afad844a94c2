package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// Timeouts for service processes.
const (
	serviceReadyTimeout = 30 * time.Second
	serviceStopGrace    = 10 * time.Second
)

// Services are the six linkmesh service processes.
type Services struct {
	GatewayURL string            // http://127.0.0.1:<port>
	URLs       map[string]string // service name → base URL, all six
	// MetricsURLs maps each process (replicas included) to its /metrics URL when
	// ServicesOptions.Metrics is set.
	MetricsURLs map[string]string
	LogDir      string // where <svc>.log files are; empty: our stderr

	logger   *slog.Logger
	spoolDir string // the gateways' click spools, on a memory-backed file system when there is one
	procs    map[string]*process
	started  map[string]startedAs
	stopOnce sync.Once
}

// startedAs is how a service process was started, so that it can be started again.
type startedAs struct {
	opts   ServicesOptions
	binary string
	env    []string
}

// ServicesOptions configures StartServices.
type ServicesOptions struct {
	BinDir         string                       // holds built binaries gateway, auth, link, analytics, moderation, quota
	MongoURI       string                       // passed as LINKMESH_MONGODB_URI
	RedisURL       string                       // passed as LINKMESH_REDIS_URL
	DatabasePrefix string                       // database of service s is DatabasePrefix+"_"+s (default "linkmesh")
	GatewayAddr    string                       // e.g. "127.0.0.1:8080"; empty → free port
	FixedPorts     bool                         // true: each service but the gateway at config.DefaultAddr; false: free ports
	Env            map[string]string            // extra env for every service (overrides defaults)
	ServiceEnv     map[string]map[string]string // per-service extra env (overrides Env)
	LogDir         string                       // each service's stdout+stderr → LogDir/<svc>.log; empty → our stderr
	Logger         *slog.Logger                 // our own progress lines; nil discards them
	// GatewayReplicas starts that many more gateways (gateway-2, gateway-3, …) on free ports
	// beside the first, as replicas behind a load balancer would run.
	GatewayReplicas int
	// AnalyticsReplicas starts that many more analytics services (analytics-2, …), all
	// consuming the same stream in the same group.
	AnalyticsReplicas int
	// Wrap prefixes a service's command, e.g. {"gateway": {"taskset", "-c", "1"}} to pin it to
	// a core in benchmarks; the prefix must exec the binary so the PID stays the service's.
	Wrap map[string][]string
	// Metrics gives every process its own metrics listener on a free loopback port
	// (LINKMESH_METRICS_ADDR), listed in Services.MetricsURLs.
	Metrics bool
	// RedisACL gives every service a Redis user of its own, made from deploy/redis/users.acl
	// (named <DatabasePrefix>-<service>, with a fresh password) on the server of RedisURL, as
	// production runs them: a key or command a service needs and its line does not grant fails.
	RedisACL bool
}

// CheckBinaries returns an error naming every service binary missing from
// binDir, so callers can fail before starting datastores.
func CheckBinaries(binDir string) error {
	var missing []string
	for _, svc := range ServiceNames() {
		if !isExecutable(filepath.Join(binDir, svc)) {
			missing = append(missing, svc)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("service binaries missing or not executable in %s: %s (build them first, e.g. make build)", binDir, strings.Join(missing, ", "))
	}
	return nil
}

// StartServices starts all six services, in order quota, link, auth,
// analytics, moderation, gateway, and waits (≤ 30 s each) until GET
// <url>/readyz answers 200. On failure it stops what it started and returns
// an error including the tail of the failing service's log.
func StartServices(ctx context.Context, opts ServicesOptions) (*Services, error) {
	// The ports are picked free but taken only when each service starts: a process of
	// another test may bind one meanwhile. Then the whole set starts again on new ports
	// (each service is told every other's address).
	for attempt := 1; ; attempt++ {
		s, err := startServices(ctx, opts)
		if err == nil || !errors.Is(err, errAddrTaken) || attempt == 3 || opts.FixedPorts {
			return s, err
		}
		if opts.Logger != nil {
			opts.Logger.Info("a service's port was taken meanwhile; starting the services again", "err", err)
		}
	}
}

// errAddrTaken marks a service that could not listen: its port was taken.
var errAddrTaken = errors.New("address already in use")

func startServices(ctx context.Context, opts ServicesOptions) (_ *Services, err error) {
	if err := CheckBinaries(opts.BinDir); err != nil {
		return nil, fmt.Errorf("start services: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.DatabasePrefix == "" {
		opts.DatabasePrefix = "linkmesh"
	}
	if opts.LogDir != "" {
		if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
			return nil, fmt.Errorf("start services: create log dir: %w", err)
		}
	}
	addrs, err := serviceAddrs(opts.GatewayAddr, opts.FixedPorts)
	if err != nil {
		return nil, fmt.Errorf("start services: %w", err)
	}
	internal, idSecret, err := secretsFor(opts.Env)
	if err != nil {
		return nil, fmt.Errorf("start services: %w", err)
	}
	if opts.Env[EnvWebhookKey] == "" {
		// The key of the webhooks' stored secrets: fresh, unless Env keeps one (make run
		// keeps it with the data, or stored webhooks could no longer sign).
		key, err := RandomSecret()
		if err != nil {
			return nil, fmt.Errorf("start services: %w", err)
		}
		env := map[string]string{EnvWebhookKey: key}
		for k, v := range opts.Env {
			env[k] = v
		}
		opts.Env = env
	}

	s := &Services{URLs: make(map[string]string), MetricsURLs: map[string]string{}, LogDir: opts.LogDir, logger: logger, procs: make(map[string]*process), started: map[string]startedAs{}}
	for svc, addr := range addrs {
		s.URLs[svc] = "http://" + addr
	}
	s.GatewayURL = s.URLs["gateway"]
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()

	if opts.RedisACL {
		urls, err := redisUsers(ctx, opts.RedisURL, opts.DatabasePrefix)
		if err != nil {
			return nil, fmt.Errorf("start services: %w", err)
		}
		own := make(map[string]map[string]string, len(urls))
		for svc, url := range urls {
			own[svc] = map[string]string{EnvRedisURL: url}
			for k, v := range opts.ServiceEnv[svc] {
				own[svc][k] = v
			}
		}
		opts.ServiceEnv = own
	}
	base := os.Environ()
	for _, svc := range ServiceNames() {
		env := serviceEnv(serviceEnvConfig{
			Base: base, Service: svc, Addrs: addrs,
			MongoURI: opts.MongoURI, RedisURL: opts.RedisURL, DatabasePrefix: opts.DatabasePrefix,
			Internal: internal, IdentitySecret: idSecret,
			Env: opts.Env, ServiceEnv: opts.ServiceEnv[svc],
		})
		if err := migrate(ctx, opts.BinDir, svc, env); err != nil {
			return nil, fmt.Errorf("start services: %w", err)
		}
		if err := s.startOne(ctx, opts, svc, svc, env); err != nil {
			return nil, fmt.Errorf("start services: %w", err)
		}
	}
	for svc, n := range map[string]int{"gateway": opts.GatewayReplicas, "analytics": opts.AnalyticsReplicas} {
		for i := range n {
			if err := s.startReplica(ctx, opts, base, addrs, svc, fmt.Sprintf("%s-%d", svc, i+2), internal, idSecret); err != nil {
				return nil, fmt.Errorf("start services: %w", err)
			}
		}
	}
	return s, nil
}

// migrateTimeout bounds one service's migration: a local database builds its indexes in
// seconds, so a migration still running after this is stuck.
const migrateTimeout = 5 * time.Minute

// migrate runs `<svc> migrate` as the chart's migration Job does before the service starts:
// the services only check their database's schema and refuse one not migrated. A service
// without a database (the gateway) says so and exits.
func migrate(ctx context.Context, binDir, svc string, env []string) error {
	ctx, cancel := context.WithTimeout(ctx, migrateTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, svc), "migrate")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s migrate: %w\n%s", svc, err, out)
	}
	return nil
}

// startReplica starts one more svc, name, on a free port, configured as the first one.
func (s *Services) startReplica(ctx context.Context, opts ServicesOptions, base []string, addrs map[string]string, svc, name string, internal identity.KeySet, idSecret string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	own := make(map[string]string, len(addrs))
	for k, v := range addrs {
		own[k] = v
	}
	own[svc] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.URLs[name] = "http://" + own[svc]
	// The public base stays the first gateway's (unless Env names one), as behind one load
	// balancer.
	replicaEnv := map[string]string{}
	if _, set := opts.Env[EnvBaseURL]; !set {
		replicaEnv[EnvBaseURL] = "http://" + addrs["gateway"]
	}
	for k, v := range opts.ServiceEnv[svc] {
		if k != "LINKMESH_DEBUG_ADDR" { // a port of its own, which only the first instance gets
			replicaEnv[k] = v
		}
	}
	env := serviceEnv(serviceEnvConfig{
		Base: base, Service: svc, Addrs: own,
		MongoURI: opts.MongoURI, RedisURL: opts.RedisURL, DatabasePrefix: opts.DatabasePrefix,
		Internal: internal, IdentitySecret: idSecret,
		Env: opts.Env, ServiceEnv: replicaEnv,
	})
	return s.startOne(ctx, opts, name, svc, env)
}

// startOne starts one service and waits for its readiness endpoint.
func (s *Services) startOne(ctx context.Context, opts ServicesOptions, svc, binary string, env []string) error {
	start := time.Now()
	if binary == "gateway" && !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, EnvClickSpool+"=") }) {
		path, err := s.spoolPath(svc)
		if err != nil {
			return err
		}
		env = append(slices.Clip(env), EnvClickSpool+"="+path)
	}
	if opts.Metrics {
		port, err := freePort()
		if err != nil {
			return err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		env = append(slices.Clip(env), "LINKMESH_METRICS_ADDR="+addr)
		s.MetricsURLs[svc] = "http://" + addr + "/metrics"
	}
	spec := processSpec{name: svc, path: filepath.Join(opts.BinDir, binary), env: env}
	if w := opts.Wrap[binary]; len(w) > 0 { // every instance of the service alike
		spec.args = append(append([]string{}, w[1:]...), spec.path)
		spec.path = w[0]
	}
	if opts.LogDir != "" {
		spec.logPath = filepath.Join(opts.LogDir, svc+".log")
	}
	p, err := startProcess(spec)
	if err != nil {
		return err
	}
	s.procs[svc] = p
	s.started[svc] = startedAs{opts: opts, binary: binary, env: env}
	client := &http.Client{Timeout: 2 * time.Second}
	url := s.URLs[svc] + "/readyz"
	err = waitReady(ctx, p, serviceReadyTimeout, func(ctx context.Context) error {
		return checkReady(ctx, client, url)
	})
	if err != nil && p.addrInUse() {
		return fmt.Errorf("%w: %w", errAddrTaken, err)
	}
	if err != nil {
		return err
	}
	s.logger.Info("service ready", "service", svc, "url", s.URLs[svc], "pid", p.pid(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// spoolPath is where the gateway name keeps its click spool, so that a restart finds the
// visits a kill left: in a directory of this run's, in memory (/dev/shm) where there is such
// a file system, as the chart keeps it.
func (s *Services) spoolPath(name string) (string, error) {
	if s.spoolDir == "" {
		parent := os.TempDir()
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			parent = "/dev/shm"
		}
		dir, err := os.MkdirTemp(parent, "linkmesh-clicks-")
		if err != nil {
			return "", fmt.Errorf("click spool directory: %w", err)
		}
		s.spoolDir = dir
	}
	return filepath.Join(s.spoolDir, name+".spool"), nil
}

// checkReady does one GET of a readiness URL and wants 200.
func checkReady(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	// Drain a little so the connection can be reused by the next poll.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return nil
}

// pickPort picks a service's port; tests replace it.
var pickPort = freePort

// serviceAddrs picks each service's listen address and checks it is free.
func serviceAddrs(gatewayAddr string, fixed bool) (map[string]string, error) {
	addrs := make(map[string]string)
	for _, svc := range ServiceNames() {
		var addr string
		switch {
		case svc == "gateway" && gatewayAddr != "":
			addr = gatewayAddr
		case svc != "gateway" && fixed:
			addr = config.DefaultAddr(svc)
		default:
			port, err := pickPort()
			if err != nil {
				return nil, err
			}
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
		if err := addrFree(addr); err != nil {
			return nil, fmt.Errorf("%s: %w (is another linkmesh still running?)", svc, err)
		}
		addrs[svc] = addr
	}
	return addrs, nil
}

// secretsFor returns the internal keys of the six services, always fresh (the tokens they sign
// live a minute, so nothing outlives these processes), and the identity secret: Env's if set,
// else a fresh random one (valid for this set of processes only).
func secretsFor(env map[string]string) (internal identity.KeySet, idSecret string, err error) {
	if internal, err = GenerateInternalKeys(); err != nil {
		return internal, "", err
	}
	if idSecret = env[EnvIdentitySecret]; idSecret == "" {
		if idSecret, err = RandomSecret(); err != nil {
			return internal, "", err
		}
	}
	return internal, idSecret, nil
}

// GenerateInternalKeys makes fresh internal keys and certificates for the six services.
func GenerateInternalKeys() (identity.KeySet, error) {
	set, err := identity.GenerateKeySet(ServiceNames()...)
	if err != nil {
		return set, fmt.Errorf("generate internal keys: %w", err)
	}
	return set, nil
}

// RandomSecret returns 32 random bytes, hex-encoded.
func RandomSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// StopService stops one service (SIGTERM, then SIGKILL after the grace period), e.g. to
// see how the others behave without it.
func (s *Services) StopService(name string) {
	if p, ok := s.procs[name]; ok {
		p.stop(syscall.SIGTERM, serviceStopGrace)
	}
}

// KillService kills one service with SIGKILL, as a crash would, and reaps it.
func (s *Services) KillService(name string) {
	if p, ok := s.procs[name]; ok {
		p.stop(syscall.SIGKILL, serviceStopGrace)
	}
}

// RestartService starts a stopped or killed service again as it was first started, on the
// same port, and waits until it is ready.
func (s *Services) RestartService(ctx context.Context, name string) error {
	st, ok := s.started[name]
	if !ok {
		return fmt.Errorf("restart %s: never started", name)
	}
	if p := s.procs[name]; p != nil && !p.exited() {
		return fmt.Errorf("restart %s: still running", name)
	}
	return s.startOne(ctx, st.opts, name, st.binary, st.env)
}

// RestartServiceWith starts a stopped service again with env added to (or replacing in) the
// environment it was started with; later restarts keep it.
func (s *Services) RestartServiceWith(ctx context.Context, name string, env map[string]string) error {
	st, ok := s.started[name]
	if !ok {
		return fmt.Errorf("restart %s: never started", name)
	}
	more := slices.Clip(st.env)
	for k, v := range env {
		more = append(more, k+"="+v) // the last value of a name wins
	}
	s.started[name] = startedAs{opts: st.opts, binary: st.binary, env: more}
	return s.RestartService(ctx, name)
}

// Stop sends SIGTERM to the gateways and waits for them (up to 10 s, then
// SIGKILL), so requests in flight can still reach the backends; then it does
// the same for the other services together. Signals go by PID. Safe to call
// twice.
func (s *Services) Stop() {
	if s == nil {
		return
	}
	s.stopOnce.Do(func() {
		stopAll := func(gateways bool) {
			var wg sync.WaitGroup
			for name, p := range s.procs {
				if (s.started[name].binary == "gateway") == gateways {
					wg.Go(func() { p.stop(syscall.SIGTERM, serviceStopGrace) })
				}
			}
			wg.Wait()
		}
		stopAll(true)
		stopAll(false)
		if s.spoolDir != "" {
			_ = os.RemoveAll(s.spoolDir)
		}
		s.logger.Info("services stopped")
	})
}
