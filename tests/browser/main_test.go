// Package browser drives the web application in Debian's headless Chromium against a whole
// linkmesh (six services, Redis, the FerretDB/DocumentDB store, an SMTP server): what a
// person does in the pages, checked by what the pages show, with axe-core on every page and
// screenshots of each at 1280 and 390 px.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/tests/internal/oidcissuer"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

const (
	adminEmail    = "root@lnk.example"
	adminPassword = "correct horse battery staple"
	password      = "s3cret-passphrase"
	oidcClientID  = "linkmesh-browser.apps.example"
	// redisDB is this package's Redis database (images use 13, observability 14).
	redisDB = 12
)

var (
	gw       string            // the gateway, also the deployment's base URL (the pages' origin)
	mails    *testenv.MailSink // the mail linkmesh sent
	dbPrefix string
	browser  context.Context // the running Chromium; each person gets a browser context of it
	issuer   *oidcissuer.Issuer
	axe      string // axe-core's source, run in every page
	shotDir  string // where the screenshots go
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	mongoURI, redisURL, ok := stack.FromEnv()
	if !ok {
		if os.Getenv(testenv.EnvRequire) != "" {
			fmt.Fprintln(os.Stderr, "browser: datastores not set; run `make test`")
			return 1
		}
		fmt.Println("browser: skipped, datastores not set (run `make test`)")
		return 0
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser: no chromium on PATH (make web-deps installs Debian's)")
		return 1
	}
	src, err := os.ReadFile("../../services/gateway/web/node_modules/axe-core/axe.min.js")
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser: axe-core missing (make web-deps):", err)
		return 1
	}
	axe = string(src)
	shotDir = os.Getenv("LINKMESH_SCREENSHOTS")
	if shotDir == "" {
		shotDir, _ = filepath.Abs("../../.linkmesh-screenshots")
	}
	if err := os.MkdirAll(shotDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}

	// Its own Redis database: the analytics consumer group and the stream are per database,
	// and other packages' stacks run beside this one.
	redisURL, releaseRedis, err := stack.IsolatedRedisDB(redisURL, redisDB)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser: redis:", err)
		return 1
	}
	defer releaseRedis()
	logDir, _ := os.MkdirTemp("", "linkmesh-browser-logs-")
	if mails, err = testenv.StartMailSink(filepath.Join(logDir, "mail")); err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	defer mails.Stop()
	dbPrefix = testenv.Name("browser")
	if issuer, err = oidcissuer.Start(oidcClientID); err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	defer issuer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// No LINKMESH_BASE_URL: the stack makes the gateway's own address the deployment's
	// origin, so the pages' same-origin checks see the browser's real Origin.
	svcs, err := stack.StartServices(ctx, stack.ServicesOptions{
		BinDir: stack.BinDir(), MongoURI: mongoURI, RedisURL: redisURL, DatabasePrefix: dbPrefix, LogDir: logDir,
		RedisACL: true,
		Env: map[string]string{
			"LINKMESH_BOOTSTRAP_ADMIN_EMAIL":    adminEmail,
			"LINKMESH_BOOTSTRAP_ADMIN_PASSWORD": adminPassword,
			"LINKMESH_SMTP_URL":                 mails.SMTPURL,
			// Every person here browses from 127.0.0.1: one client for the per-client windows.
			"LINKMESH_REGISTER_LIMIT":         "1000",
			"LINKMESH_ANON_QUOTA":             "1000",
			"LINKMESH_OIDC_ISSUER":            issuer.URL,
			"LINKMESH_OIDC_CLIENT_ID":         oidcClientID,
			"LINKMESH_OIDC_AUTHORIZATION_URL": issuer.AuthorizationURL(),
			// The webhook test's receiver listens on loopback.
			"LINKMESH_WEBHOOK_ALLOWED_CIDRS": "127.0.0.1/32",
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser: start services:", err)
		return 1
	}
	gw = svcs.GatewayURL
	issuer.RedirectURI = gw + "/" // what an operator registers with the provider

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("lang", "en-US"), chromedp.WindowSize(1280, 900))...)
	var cancelBrowser context.CancelFunc
	browser, cancelBrowser = chromedp.NewContext(alloc)
	code := 1
	if err := chromedp.Do(browser); err != nil {
		fmt.Fprintln(os.Stderr, "browser: start chromium:", err)
	} else {
		code = m.Run()
	}
	cancelBrowser()
	cancelAlloc()
	svcs.Stop()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "browser: service logs are in", logDir)
	} else {
		_ = os.RemoveAll(logDir)
		fmt.Println("browser: screenshots in", shotDir)
	}
	return code
}
