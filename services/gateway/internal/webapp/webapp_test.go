package webapp_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/services/gateway/internal/webapp"
)

func newApp(t *testing.T, cfg webapp.Config) (*fiber.App, *webapp.App) {
	t.Helper()
	w, err := webapp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{ErrorHandler: errs.Handler(slog.New(slog.DiscardHandler))})
	w.Register(app)
	app.Get("/:code", func(c *fiber.Ctx) error {
		var err error
		switch c.Params("code") {
		case "gone1":
			err = errs.E(errs.KindGone, "short link has expired")
		case "off1":
			err = errs.Forbidden("short link has been disabled")
		case "busy1":
			err = errs.E(errs.KindUnavailable, "link service unavailable")
		case "odd1":
			// What a made-up path can hold, raw: the page must not repeat it.
			return w.Refused(c, `a<b>"c/Your-account-is-locked`, errs.NotFound("short link not found"))
		default:
			err = errs.NotFound("short link not found")
		}
		return w.Refused(c, c.Params("code"), err)
	})
	return app, w
}

func get(t *testing.T, app *fiber.App, path string, headers ...string) (int, map[string]string, []byte) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	h := map[string]string{}
	for k := range res.Header {
		h[k] = res.Header.Get(k)
	}
	return res.StatusCode, h, body
}

var assetRef = regexp.MustCompile(`(?:src|href)="(/assets/app-[0-9a-f]{12}\.(?:js|css))"`)

// The index names its files by content; each is immutable, compressed as asked, and
// revalidates with its ETag; the page itself always revalidates.
func TestServesTheAppWithFingerprintsCachingAndCompression(t *testing.T) {
	app, _ := newApp(t, webapp.Config{})
	status, h, index := get(t, app, "/")
	if status != 200 || h["Cache-Control"] != "no-cache" || !strings.HasPrefix(h["Content-Type"], "text/html") || h["Etag"] == "" {
		t.Fatalf("GET / = %d %v", status, h)
	}
	refs := assetRef.FindAllStringSubmatch(string(index), -1)
	if len(refs) != 2 {
		t.Fatalf("index.html references %d fingerprinted assets, want 2:\n%s", len(refs), index)
	}
	for _, ref := range refs {
		p := ref[1]
		status, plain, body := get(t, app, p)
		if status != 200 || plain["Cache-Control"] != "public, max-age=31536000, immutable" || plain["Content-Encoding"] != "" || plain["Vary"] != "Accept-Encoding" {
			t.Fatalf("GET %s = %d %v", p, status, plain)
		}
		checkSecurityHeaders(t, plain)
		_, gzh, gz := get(t, app, p, "Accept-Encoding", "gzip, deflate")
		// Each coding is its own representation with its own tag; any of them revalidates.
		if gzh["Etag"] == plain["Etag"] || gzh["Etag"] == "" {
			t.Fatalf("%s: gzip ETag %q, plain %q", p, gzh["Etag"], plain["Etag"])
		}
		if status, _, _ := get(t, app, p, "Accept-Encoding", "br", "If-None-Match", gzh["Etag"]); status != 304 {
			t.Fatalf("%s: If-None-Match with the gzip tag = %d", p, status)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil || gzh["Content-Encoding"] != "gzip" {
			t.Fatalf("gzip answer %v: %v", gzh, err)
		}
		if unz, _ := io.ReadAll(zr); !bytes.Equal(unz, body) {
			t.Fatalf("%s: the gzip body differs from the plain one", p)
		}
		_, brh, br := get(t, app, p, "Accept-Encoding", "gzip, br")
		if unbr, _ := io.ReadAll(brotli.NewReader(bytes.NewReader(br))); brh["Content-Encoding"] != "br" || !bytes.Equal(unbr, body) {
			t.Fatalf("%s: brotli answer %v differs", p, brh)
		}
		if len(br) >= len(body) || len(gz) >= len(body) {
			t.Fatalf("%s: compressed %d/%d bytes of %d", p, len(br), len(gz), len(body))
		}
		status, nm, empty := get(t, app, p, "If-None-Match", plain["Etag"])
		if status != 304 || len(empty) != 0 || nm["Etag"] != plain["Etag"] {
			t.Fatalf("If-None-Match %s = %d (%d bytes)", plain["Etag"], status, len(empty))
		}
		// The fingerprint is the content's: a changed file gets a new name.
		if !strings.Contains(p, strings.Trim(plain["Etag"], `"`)) {
			t.Fatalf("%s is not named by its content's hash %s", p, plain["Etag"])
		}
	}
	if status, h, _ := get(t, app, "/", "If-None-Match", `W/"x", `+h["Etag"]); status != 304 {
		t.Fatalf("index revalidation = %d %v", status, h)
	}
	if status, _, body := get(t, app, "/assets/app-000000000000.js"); status != 404 || !strings.Contains(string(body), `"error"`) {
		t.Fatalf("unknown asset = %d %s", status, body)
	}
}

func checkSecurityHeaders(t *testing.T, h map[string]string) {
	t.Helper()
	csp := h["Content-Security-Policy"]
	for _, want := range []string{"default-src 'self'", "script-src 'self';", "style-src 'self';", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Fatalf("CSP %q lacks %q", csp, want)
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "http:"} {
		if strings.Contains(csp, bad) {
			t.Fatalf("CSP %q allows %q", csp, bad)
		}
	}
	if h["X-Content-Type-Options"] != "nosniff" || h["Referrer-Policy"] != "strict-origin-when-cross-origin" {
		t.Fatalf("security headers %v", h)
	}
}

func TestEncodingNegotiation(t *testing.T) {
	for header, want := range map[string]string{
		"": "", "identity": "", "gzip": "gzip", "br": "br", "gzip, br": "br", "br;q=0, gzip": "gzip",
		"br;q=0,gzip;q=0": "", "*": "br", "*;q=0": "", "br;q=0, *": "gzip", "GZIP;Q=0.5": "gzip",
		"gzip;q=0.000": "", "deflate": "", "br;q=0.1, gzip;q=1": "gzip", "gzip;q=0.5, br;q=0.5": "br",
		"gzip;level=1;q=0": "", "br;q=abc, gzip": "gzip", "br;q=2": "",
	} {
		if got := webapp.Encoding(header); got != want {
			t.Errorf("Encoding(%q) = %q, want %q", header, got, want)
		}
	}
}

// A configured captcha adds exactly its provider's origin to the policy and tells the page
// its site key; without one, nothing foreign is allowed.
func TestPolicyAndConfigFollowTheCaptcha(t *testing.T) {
	app, _ := newApp(t, webapp.Config{CaptchaSiteKey: `key"<x>`, CaptchaScriptURL: "https://js.hcaptcha.com/1/api.js"})
	_, h, index := get(t, app, "/")
	csp := h["Content-Security-Policy"]
	// hCaptcha's widget frames and calls come from other hosts of its domain.
	if !strings.Contains(csp, "script-src 'self' https://hcaptcha.com https://*.hcaptcha.com;") || !strings.Contains(csp, "frame-src https://hcaptcha.com https://*.hcaptcha.com;") ||
		!strings.Contains(csp, "connect-src 'self' https://hcaptcha.com https://*.hcaptcha.com;") {
		t.Fatalf("CSP with hCaptcha: %q", csp)
	}
	if !strings.Contains(string(index), `<meta name="linkmesh-captcha" content="key&#34;&lt;x&gt;" data-script="https://js.hcaptcha.com/1/api.js">`) {
		t.Fatalf("index lacks the escaped captcha config:\n%s", index)
	}
	app, _ = newApp(t, webapp.Config{CaptchaSiteKey: "k", CaptchaScriptURL: "https://challenges.cloudflare.com/turnstile/v0/api.js"})
	if _, h, _ := get(t, app, "/"); !strings.Contains(h["Content-Security-Policy"], "script-src 'self' https://challenges.cloudflare.com;") ||
		!strings.Contains(h["Content-Security-Policy"], "frame-src https://challenges.cloudflare.com;") {
		t.Fatalf("CSP with Turnstile: %q", h["Content-Security-Policy"])
	}
	app, _ = newApp(t, webapp.Config{})
	_, h, index = get(t, app, "/")
	if strings.Contains(h["Content-Security-Policy"], "https:") || strings.Contains(string(index), "linkmesh-captcha") || !strings.Contains(h["Content-Security-Policy"], "frame-src 'none'") {
		t.Fatalf("without a captcha: %q\n%s", h["Content-Security-Policy"], index)
	}
	// A verifier without a widget: the pages say so instead of failing every anonymous form.
	app, _ = newApp(t, webapp.Config{CaptchaRequired: true})
	if _, _, index := get(t, app, "/"); !strings.Contains(string(index), `<meta name="linkmesh-captcha-unavailable" content="true">`) {
		t.Fatalf("a verifier without a widget is not told to the page:\n%s", index)
	}
	if _, err := webapp.New(webapp.Config{CaptchaSiteKey: "k", CaptchaScriptURL: "http://insecure.example/api.js"}); err == nil {
		t.Fatal("an http captcha script was accepted")
	}
}

// A browser following a refused short link gets a page with the visit's status; API clients
// and statuses without a page keep the JSON envelope.
func TestRefusedVisitPages(t *testing.T) {
	app, _ := newApp(t, webapp.Config{})
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for path, want := range map[string]struct {
		status int
		says   string
	}{
		"/gone1": {410, "This short link has expired"}, "/off1": {403, "This short link has been disabled"},
		"/nope1": {404, "This short link does not exist"}, "/odd1": {404, "This short link does not exist"},
	} {
		status, h, body := get(t, app, path, "Accept", browser)
		page := string(body)
		if status != want.status || !strings.HasPrefix(h["Content-Type"], "text/html") || !strings.Contains(page, "<h1>"+want.says) ||
			!strings.Contains(page, `href="/#/report`) || h["Cache-Control"] != "private, no-store" {
			t.Fatalf("GET %s as a browser = %d %v\n%s", path, status, h, page)
		}
		if !assetRef.MatchString(page) {
			t.Fatalf("page of %s lacks the style sheet:\n%s", path, page)
		}
		if path == "/odd1" {
			if strings.Contains(page, "Your-account") || strings.Contains(page, "a&lt;b") || strings.Contains(page, "<b>") || strings.Contains(page, "?code=") {
				t.Fatalf("the page repeats an impossible code:\n%s", page)
			}
		} else if !strings.Contains(page, `<span class="code">`+path+`</span>`) || !strings.Contains(page, `href="/#/report?code=`+path[1:]+`"`) {
			t.Fatalf("page of %s does not name the link:\n%s", path, page)
		}
		checkSecurityHeaders(t, h)
		status, h, body = get(t, app, path, "Accept", "application/json")
		if status != want.status || !strings.HasPrefix(h["Content-Type"], "application/json") || !strings.Contains(string(body), `{"error":`) {
			t.Fatalf("GET %s as an API client = %d %v %s", path, status, h, body)
		}
		if status, _, body := get(t, app, path); status != want.status || !strings.HasPrefix(string(body), `{"error":`) {
			t.Fatalf("GET %s without Accept = %d %s", path, status, body)
		}
	}
	if status, h, body := get(t, app, "/busy1", "Accept", browser); status != 503 || !strings.HasPrefix(h["Content-Type"], "application/json") {
		t.Fatalf("a 503 as a browser = %d %v %s", status, h, body)
	}
}

// The first page's script and style sheet stay within 150 KiB compressed.
func TestFirstPageBudget(t *testing.T) {
	app, _ := newApp(t, webapp.Config{})
	_, _, index := get(t, app, "/", "Accept-Encoding", "gzip")
	total := len(index)
	for _, ref := range assetRef.FindAllStringSubmatch(string(gunzip(t, index)), -1) {
		_, _, body := get(t, app, ref[1], "Accept-Encoding", "gzip")
		total += len(body)
	}
	t.Logf("first page: %d bytes gzip-compressed (index, script, style sheet)", total)
	if total > 150<<10 || total < 1<<10 {
		t.Fatalf("the first page weighs %d bytes compressed; the budget is 150 KiB", total)
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The committed dist/ is what the sources build to: a fresh build from the locked packages
// gives the same bytes. It needs Node.js and `npm ci` in services/gateway/web (make web-deps).
func TestDistIsFresh(t *testing.T) {
	web, _ := filepath.Abs("../../web")
	if _, err := os.Stat(filepath.Join(web, "node_modules", "esbuild")); err != nil {
		if os.Getenv("LINKMESH_REQUIRE_INTEGRATION") != "" {
			t.Fatalf("%s/node_modules is missing: run make web-deps", web)
		}
		t.Skip("no node_modules in services/gateway/web (make web-deps)")
	}
	out := t.TempDir()
	cmd := exec.Command("node", "build.mjs", out)
	cmd.Dir = web
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node build.mjs: %v\n%s", err, b)
	}
	for _, name := range []string{"index.html", "app.js", "app.css"} {
		fresh, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("dist", name))
		if errors.Is(err, os.ErrNotExist) || !bytes.Equal(fresh, committed) {
			t.Fatalf("dist/%s differs from a fresh build of ../../web (run make web and commit): %v", name, err)
		}
	}
	entries, _ := os.ReadDir("dist")
	if len(entries) != 3 {
		t.Fatalf("dist holds %d files, want index.html, app.js, app.css", len(entries))
	}
}
