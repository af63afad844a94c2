// Package webapp serves the web application from memory: index.html at /, its script and
// style sheet under /assets/ with names fingerprinted by content, each compressed once at
// start (gzip and brotli) and answered with an ETag; and the small HTML pages a browser gets
// for a short link that is unknown, disabled or expired.
//
// The files come from dist/, built from ../../web by `make web` (esbuild) and committed, so
// `go build` needs no Node.js; TestDistIsFresh proves the committed files equal a fresh build.
package webapp

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html"
	"io/fs"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/gofiber/fiber/v2"
)

//go:embed dist
var dist embed.FS

// Config is what the pages need to know of the deployment.
type Config struct {
	// CaptchaSiteKey and CaptchaScriptURL make the pages show the captcha provider's widget
	// (hCaptcha or Cloudflare Turnstile); the script's origin is added to the policy. Both
	// or neither.
	CaptchaSiteKey   string
	CaptchaScriptURL string
}

// asset is one file ready to send.
type asset struct {
	body, gz, br []byte
	etag, ctype  string
	// cache is its Cache-Control: fingerprinted files never change, index.html revalidates.
	cache string
}

// App is the web application's files and headers.
type App struct {
	assets map[string]*asset // by request path
	index  *asset
	css    string // the fingerprinted style sheet's path, for the status pages
	csp    string
}

const immutable = "public, max-age=31536000, immutable"

// New prepares every file: fingerprints, the index page with its configuration, compression.
func New(cfg Config) (*App, error) {
	a := &App{assets: map[string]*asset{}}
	var captchaOrigin string
	if cfg.CaptchaScriptURL != "" {
		u, err := url.Parse(cfg.CaptchaScriptURL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("captcha script URL %q: want an https URL", cfg.CaptchaScriptURL)
		}
		captchaOrigin = u.Scheme + "://" + u.Host
	}
	a.csp = Policy(captchaOrigin)
	index, err := fs.ReadFile(dist, "dist/index.html")
	if err != nil {
		return nil, err
	}
	page := string(index)
	for _, name := range []string{"app.js", "app.css"} {
		body, err := fs.ReadFile(dist, "dist/"+name)
		if err != nil {
			return nil, err
		}
		ext := path.Ext(name)
		p := "/assets/" + strings.TrimSuffix(name, ext) + "-" + fingerprint(body) + ext
		a.assets[p] = newAsset(body, mimeOf(ext), immutable)
		page = strings.Replace(page, "{{"+name+"}}", p, 1)
		if ext == ".css" {
			a.css = p
		}
	}
	page = strings.Replace(page, "{{config}}", configTags(cfg), 1)
	if strings.Contains(page, "{{") {
		return nil, fmt.Errorf("webapp: index.html has a placeholder left: %q", page[strings.Index(page, "{{"):])
	}
	a.index = newAsset([]byte(page), fiber.MIMETextHTMLCharsetUTF8, "no-cache")
	return a, nil
}

// Policy is the Content-Security-Policy of every page: only our own files, no inline script
// or style attribute, no eval, never framed; the captcha provider's origin (when set) may
// serve its script and frame.
func Policy(captchaOrigin string) string {
	script, frame, style, connect := "'self'", "'none'", "'self'", "'self'"
	if captchaOrigin != "" {
		script += " " + captchaOrigin
		frame = captchaOrigin
		style += " " + captchaOrigin
		connect += " " + captchaOrigin
	}
	return "default-src 'self'; script-src " + script + "; style-src " + style + "; img-src 'self' data:; connect-src " + connect +
		"; frame-src " + frame + "; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// configTags are the <meta> elements that tell the script the deployment's settings (data,
// not script, so the policy needs no inline script).
func configTags(cfg Config) string {
	if cfg.CaptchaSiteKey == "" || cfg.CaptchaScriptURL == "" {
		return ""
	}
	return `<meta name="linkmesh-captcha" content="` + html.EscapeString(cfg.CaptchaSiteKey) + `" data-script="` + html.EscapeString(cfg.CaptchaScriptURL) + `">`
}

func fingerprint(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

func mimeOf(ext string) string {
	if ext == ".css" {
		return "text/css; charset=utf-8"
	}
	return "text/javascript; charset=utf-8"
}

func newAsset(body []byte, ctype, cache string) *asset {
	var gz, br bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = zw.Write(body)
	_ = zw.Close()
	bw := brotli.NewWriterLevel(&br, brotli.BestCompression)
	_, _ = bw.Write(body)
	_ = bw.Close()
	return &asset{body: body, gz: gz.Bytes(), br: br.Bytes(), ctype: ctype, cache: cache, etag: `"` + fingerprint(body) + `"`}
}

// Register mounts / and /assets/* on app.
func (a *App) Register(app *fiber.App) {
	app.Get("/", func(c *fiber.Ctx) error { return a.send(c, a.index) })
	app.Get("/assets/:name", func(c *fiber.Ctx) error {
		f, ok := a.assets[c.Path()]
		if !ok {
			return fiber.NewError(fiber.StatusNotFound, "no such asset")
		}
		return a.send(c, f)
	})
}

// Headers sets the security headers every page carries.
func (a *App) Headers(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentSecurityPolicy, a.csp)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "strict-origin-when-cross-origin")
}

func (a *App) send(c *fiber.Ctx, f *asset) error {
	a.Headers(c)
	c.Set(fiber.HeaderCacheControl, f.cache)
	c.Set(fiber.HeaderETag, f.etag)
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	if matches(string(c.Request().Header.Peek(fiber.HeaderIfNoneMatch)), f.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, f.ctype)
	body := f.body
	switch enc := Encoding(string(c.Request().Header.Peek(fiber.HeaderAcceptEncoding))); enc {
	case "br":
		body = f.br
		c.Set(fiber.HeaderContentEncoding, enc)
	case "gzip":
		body = f.gz
		c.Set(fiber.HeaderContentEncoding, enc)
	}
	return c.Status(fiber.StatusOK).Send(body)
}

// matches reports whether an If-None-Match header names etag (or is "*").
func matches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// Encoding picks brotli, then gzip, from an Accept-Encoding header; a coding with q=0 is
// refused, "*" stands for any coding not named. "" means the body goes as it is.
func Encoding(header string) string {
	q := map[string]float64{}
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		weight := 1.0
		if v, ok := strings.CutPrefix(strings.ReplaceAll(strings.ToLower(params), " ", ""), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				weight = f
			}
		}
		if name != "" {
			q[name] = weight
		}
	}
	for _, enc := range []string{"br", "gzip"} {
		w, named := q[enc]
		if !named {
			w, named = q["*"]
		}
		if named && w > 0 {
			return enc
		}
	}
	return ""
}
