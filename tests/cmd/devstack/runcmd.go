package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// runConfig is what `devstack run` resolved from flags and environment.
type runConfig struct {
	dataDir     string
	binDir      string
	logDir      string // "" sends service logs to stderr
	gatewayAddr string
	mongoURI    string // external MongoDB, or "" to start FerretDB
	redisURL    string // external Redis, or "" to start redis-server
}

// parseRunConfig reads `devstack run` flags and the environment.
func parseRunConfig(args []string) (runConfig, error) {
	fs := flag.NewFlagSet("devstack run", flag.ContinueOnError)
	data := fs.String("data", ".linkmesh", "data directory (kept across runs)")
	bin := fs.String("bin", "bin", "directory with the built service binaries")
	logs := fs.String("logs", "", `service log directory (default DATA/logs; "-" for stderr)`)
	if err := fs.Parse(args); err != nil {
		return runConfig{}, &exitCodeError{code: 2}
	}
	if fs.NArg() > 0 {
		return runConfig{}, fmt.Errorf("devstack run: unexpected arguments %q", fs.Args())
	}
	c := runConfig{
		gatewayAddr: os.Getenv("LINKMESH_GATEWAY_ADDR"),
		mongoURI:    os.Getenv(stack.EnvMongoURI),
		redisURL:    os.Getenv(stack.EnvRedisURL),
	}
	if c.gatewayAddr == "" {
		c.gatewayAddr = config.DefaultAddr(config.Gateway)
	}
	var err error
	if c.dataDir, err = filepath.Abs(*data); err != nil {
		return runConfig{}, fmt.Errorf("resolve data dir: %w", err)
	}
	if c.binDir, err = filepath.Abs(*bin); err != nil {
		return runConfig{}, fmt.Errorf("resolve bin dir: %w", err)
	}
	switch *logs {
	case "":
		c.logDir = filepath.Join(c.dataDir, "logs")
	case "-":
	default:
		if c.logDir, err = filepath.Abs(*logs); err != nil {
			return runConfig{}, fmt.Errorf("resolve log dir: %w", err)
		}
	}
	return c, nil
}

// runStack is `devstack run`: everything up, wait for a signal, everything
// down (services first, then datastores).
func runStack(ctx context.Context, args []string, logger *slog.Logger) error {
	cfg, err := parseRunConfig(args)
	if err != nil {
		return err
	}
	// Check binaries before spending time on datastores.
	if err := stack.CheckBinaries(cfg.binDir); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	secrets, err := loadSecrets(cfg.dataDir)
	if err != nil {
		return err
	}

	// A signal during start-up cancels it; start-up cleans up after itself.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	mongoURI, redisURL := cfg.mongoURI, cfg.redisURL
	var ds *stack.Datastores
	if mongoURI == "" || redisURL == "" {
		ds, err = stack.StartDatastoresWithOptions(ctx, stack.DatastoresOptions{
			Dir:       cfg.dataDir,
			Logger:    logger,
			SkipMongo: mongoURI != "",
			SkipRedis: redisURL != "",
		})
		if err != nil {
			return startErr(ctx, fmt.Errorf("start datastores: %w", err), logger)
		}
		defer ds.Stop()
		if mongoURI == "" {
			mongoURI = ds.MongoURI
		}
		if redisURL == "" {
			redisURL = ds.RedisURL
		}
	}

	// The public base honours LINKMESH_BASE_URL; otherwise links read http://localhost:<port>.
	env := map[string]string{stack.EnvBaseURL: os.Getenv(stack.EnvBaseURL)}
	if env[stack.EnvBaseURL] == "" {
		_, port, _ := net.SplitHostPort(cfg.gatewayAddr)
		env[stack.EnvBaseURL] = "http://localhost:" + port
	}
	for k, v := range secrets {
		env[k] = v
	}
	// Mail goes to LINKMESH_SMTP_URL when set, else to the embedded mail server, which keeps
	// it and shows it on its web view.
	var sink *testenv.MailSink
	if env[stack.EnvSMTPURL] = os.Getenv(stack.EnvSMTPURL); env[stack.EnvSMTPURL] == "" {
		if sink, err = testenv.StartMailSink(filepath.Join(cfg.dataDir, "mail")); err != nil {
			return startErr(ctx, err, logger)
		}
		defer sink.Stop()
		env[stack.EnvSMTPURL] = sink.SMTPURL
	}
	svcs, err := stack.StartServices(ctx, stack.ServicesOptions{
		BinDir:      cfg.binDir,
		MongoURI:    mongoURI,
		RedisURL:    redisURL,
		GatewayAddr: cfg.gatewayAddr,
		FixedPorts:  true,
		Env:         env,
		LogDir:      cfg.logDir,
		Logger:      logger,
		// Each service with a Redis user of its own, as in production (deploy/redis/users.acl).
		RedisACL: true,
	})
	if err != nil {
		return startErr(ctx, err, logger)
	}
	// Deferred calls run in reverse, so services stop before datastores.
	defer svcs.Stop()

	printTable(cfg, svcs, ds, mongoURI, redisURL, sink)
	<-ctx.Done()
	logger.Info("shutting down")
	return nil
}

// startErr turns a start-up failure caused by Ctrl-C into a quiet exit
// with the conventional status 130 instead of a confusing "context canceled".
func startErr(ctx context.Context, err error, logger *slog.Logger) error {
	if ctx.Err() != nil {
		logger.Info("interrupted during start-up")
		return &exitCodeError{code: 130}
	}
	return err
}

// printTable shows where everything listens.
func printTable(cfg runConfig, svcs *stack.Services, ds *stack.Datastores, mongoURI, redisURL string, sink *testenv.MailSink) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nlinkmesh is running (Ctrl-C to stop)")
	fmt.Fprintf(w, "web app\t%s/\t(open it in a browser)\n", svcs.GatewayURL)
	fmt.Fprintf(w, "gateway\t%s\n", svcs.GatewayURL)
	// Port order (8081…8085) reads better than start order.
	for _, svc := range []string{"auth", "link", "analytics", "moderation", "quota"} {
		fmt.Fprintf(w, "%s\t%s\n", svc, svcs.URLs[svc])
	}
	mongoNote, redisNote := "external", "external"
	if ds != nil && ds.MongoURI != "" {
		mongoNote = "FerretDB on PostgreSQL " + ds.PostgresURL
	}
	if ds != nil && ds.RedisURL != "" {
		redisNote = "embedded redis-server"
	}
	fmt.Fprintf(w, "mongodb\t%s\t(%s)\n", mongoURI, mongoNote)
	fmt.Fprintf(w, "redis\t%s\t(%s)\n", redisURL, redisNote)
	if sink != nil {
		fmt.Fprintf(w, "mail\t%s\t(the mail sent, kept by the embedded SMTP server %s)\n", sink.ViewURL, sink.SMTPURL)
	} else {
		fmt.Fprintf(w, "mail\t%s\t(external)\n", "LINKMESH_SMTP_URL")
	}
	fmt.Fprintf(w, "data\t%s\n", cfg.dataDir)
	logs := "stderr"
	if cfg.logDir != "" {
		logs = filepath.Join(cfg.logDir, "<service>.log")
	}
	fmt.Fprintf(w, "service logs\t%s\n", logs)
	if ds != nil {
		fmt.Fprintf(w, "datastore logs\t%s\n", ds.LogDir)
	}
	fmt.Fprintln(w)
	_ = w.Flush()
}
