// Package e2e starts every linkmesh service as its own process against the real datastores
// that `make test` provides, and speaks only HTTP to the gateway.
package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/tests/internal/oidcissuer"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// baseURL is the public base the stack runs with; a destination on its host is refused.
const baseURL = "https://lnk.example"

var (
	gw        string // gateway base URL
	gw2       string // a second gateway replica, for changes that must reach every replica
	mongoURI  string
	redisURL  string
	dbPrefix  string
	dnsServer *testenv.DNS
	otlp      *otlpReceiver
	issuer    *oidcissuer.Issuer
	services  *stack.Services   // the running stack, for drills that kill and restart a service
	mails     *testenv.MailSink // the mail the stack sent
)

// The bootstrap super admin of the e2e stack.
const (
	adminEmail    = "root@lnk.example"
	adminPassword = "correct horse battery staple"
	oidcClientID  = "linkmesh-e2e.apps.example"
	// loginFailures is the stack's failed-login limit per window.
	loginFailures = 5
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var ok bool
	mongoURI, redisURL, ok = stack.FromEnv()
	if !ok {
		if os.Getenv(testenv.EnvRequire) != "" {
			fmt.Fprintln(os.Stderr, "e2e: datastores not set; run `make test`")
			return 1
		}
		fmt.Println("e2e: skipped, datastores not set (run `make test`)")
		return 0
	}
	var err error
	if dnsServer, err = testenv.StartDNS(map[string][]netip.Addr{
		"public.test":   {netip.MustParseAddr("93.184.216.34")},
		"intranet.test": {netip.MustParseAddr("10.1.2.3")},
		"mixed.test":    {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("fd00::7")},
		"rebind.test":   {netip.MustParseAddr("93.184.216.34")},
	}); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer dnsServer.Close()
	if otlp, err = startOTLPReceiver(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer otlp.Close()
	if issuer, err = oidcissuer.Start(oidcClientID); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer issuer.Close()

	logDir, _ := os.MkdirTemp("", "linkmesh-e2e-logs-")
	// The mail the services send arrives here, where the tests read it.
	if mails, err = testenv.StartMailSink(filepath.Join(logDir, "mail")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer mails.Stop()
	dbPrefix = testenv.Name("e2e")
	geoDB := filepath.Join(logDir, "countries.mmdb")
	if err := testenv.BuildGeoIP(geoDB, testenv.GeoIPLocationDB, geoCountries); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: GeoIP database:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	svcs, err := stack.StartServices(ctx, stack.ServicesOptions{
		BinDir: stack.BinDir(), MongoURI: mongoURI, RedisURL: redisURL, DatabasePrefix: dbPrefix, LogDir: logDir,
		GatewayReplicas:   1,
		AnalyticsReplicas: 1,
		Metrics:           true,
		// Every service as its own Redis user (deploy/redis/users.acl): a key or command its
		// line does not grant fails here.
		RedisACL: true,
		Env: map[string]string{
			"LINKMESH_BASE_URL": baseURL,
			// Tests give each scenario its own client address through a trusted proxy hop.
			"LINKMESH_TRUSTED_PROXIES": "127.0.0.1/32",
			"LINKMESH_DNS_SERVER":      dnsServer.Addr(),
			"LINKMESH_DNS_TIMEOUT":     "500ms",
			// Tracing on, exported over OTLP/HTTP to the test's receiver, flushed quickly.
			"OTEL_EXPORTER_OTLP_ENDPOINT":       otlp.Endpoint(),
			"OTEL_BSP_SCHEDULE_DELAY":           "100",
			"LINKMESH_BOOTSTRAP_ADMIN_EMAIL":    adminEmail,
			"LINKMESH_BOOTSTRAP_ADMIN_PASSWORD": adminPassword,
			"LINKMESH_OIDC_ISSUER":              issuer.URL,
			"LINKMESH_OIDC_CLIENT_ID":           oidcClientID,
			"LINKMESH_LOGIN_MAX_FAILURES":       itoa(loginFailures),
			"LINKMESH_GEOIP_DB":                 geoDB,
			"LINKMESH_TOKEN_RATE":               itoa(tokenRate),
			// The webhook receivers of the tests listen on 127.0.0.1; retries come quickly.
			"LINKMESH_WEBHOOK_ALLOWED_CIDRS": "127.0.0.1/32",
			"LINKMESH_WEBHOOK_RETRY_BASE":    "100ms",
			// The ceiling of failed logins of one e-mail over all clients (login_limits_test.go).
			"LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL":  itoa(loginFailuresPerEmail),
			"LINKMESH_LOGIN_MAX_FAILURES_PER_CLIENT": itoa(loginFailuresPerClient),
			"LINKMESH_SMTP_URL":                      mails.SMTPURL,
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start services:", err)
		return 1
	}
	gw, gw2 = svcs.GatewayURL, svcs.URLs["gateway-2"]
	services = svcs
	code := m.Run()
	// No client address may have reached any document or the clicks stream.
	if code == 0 {
		if err := scanForClientIPs(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			code = 1
		}
	}
	svcs.Stop()
	// Nor any secret a log line.
	if code == 0 {
		if err := scanLogsForSecrets(logDir); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			code = 1
		}
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "e2e: service logs are in", logDir)
	} else {
		_ = os.RemoveAll(logDir)
	}
	return code
}
