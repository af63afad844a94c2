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
	// (hCaptcha or Cloudflare Turnstile); its origins are added to the policy. Both or
	// neither.
	CaptchaSiteKey   string
	CaptchaScriptURL string
	// CaptchaRequired says a verifier is configured: without a widget, the pages tell
	// anonymous visitors that creating, registering and reporting need the API or a sign-in.
	CaptchaRequired bool
}

// asset is one file ready to send.
type asset struct {
	body, gz, br []byte
	// etag is the content's; each coding's representation has its own tag (etag with
	// "-gzip" or "-br" inside the quotes), as RFC 9110 §8.8.3 asks.
	etag, ctype string
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
	var captcha []string
	if cfg.CaptchaScriptURL != "" {
		u, err := url.Parse(cfg.CaptchaScriptURL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("captcha script URL %q: want an https URL", cfg.CaptchaScriptURL)
		}
		captcha = CaptchaSources(u.Host)
	}
	a.csp = Policy(captcha...)
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
// or style attribute, no eval, never framed; the captcha provider's sources (when set) may
// serve its script, styles and frames and answer its calls.
func Policy(captcha ...string) string {
	script, frame, style, connect := "'self'", "'none'", "'self'", "'self'"
	if len(captcha) > 0 {
		extra := " " + strings.Join(captcha, " ")
		script += extra
		frame = strings.TrimSpace(extra)
		style += extra
		connect += extra
	}
	return "default-src 'self'; script-src " + script + "; style-src " + style + "; img-src 'self' data:; connect-src " + connect +
		"; frame-src " + frame + "; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// CaptchaSources are the origins a captcha widget served from host needs. hCaptcha loads its
// frame and answers from other hosts of its domain (its CSP guide lists hcaptcha.com and
// *.hcaptcha.com); Turnstile and others serve everything from the script's own origin.
func CaptchaSources(host string) []string {
	host = strings.ToLower(host)
	if host == "hcaptcha.com" || strings.HasSuffix(host, ".hcaptcha.com") {
		return []string{"https://hcaptcha.com", "https://*.hcaptcha.com"}
	}
	return []string{"https://" + host}
}

// configTags are the <meta> elements that tell the script the deployment's settings (data,
// not script, so the policy needs no inline script).
func configTags(cfg Config) string {
	if cfg.CaptchaSiteKey == "" || cfg.CaptchaScriptURL == "" {
		if cfg.CaptchaRequired {
			return `<meta name="linkmesh-captcha-unavailable" content="true">`
		}
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

// headers sets the security headers every page carries.
func (a *App) headers(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentSecurityPolicy, a.csp)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "strict-origin-when-cross-origin")
}

func (a *App) send(c *fiber.Ctx, f *asset) error {
	a.headers(c)
	c.Set(fiber.HeaderCacheControl, f.cache)
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	enc := Encoding(string(c.Request().Header.Peek(fiber.HeaderAcceptEncoding)))
	c.Set(fiber.HeaderETag, f.tag(enc))
	if f.matches(string(c.Request().Header.Peek(fiber.HeaderIfNoneMatch))) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, f.ctype)
	body := f.body
	switch enc {
	case "br":
		body = f.br
		c.Set(fiber.HeaderContentEncoding, enc)
	case "gzip":
		body = f.gz
		c.Set(fiber.HeaderContentEncoding, enc)
	}
	return c.Status(fiber.StatusOK).Send(body)
}

// tag is the ETag of the representation in coding enc ("" for none).
func (f *asset) tag(enc string) string {
	if enc == "" {
		return f.etag
	}
	return strings.TrimSuffix(f.etag, `"`) + "-" + enc + `"`
}

// matches reports whether an If-None-Match header names any representation of the file (or
// is "*"): they all carry the same content.
func (f *asset) matches(header string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == f.etag || t == f.tag("gzip") || t == f.tag("br") {
			return true
		}
	}
	return false
}

// Encoding picks the coding to send from an Accept-Encoding header: brotli or gzip, whichever
// the client weights higher (brotli on a tie), never one it gives q=0; "*" stands for any
// coding not named. "" means the body goes as it is.
func Encoding(header string) string {
	q := map[string]float64{}
	for _, part := range strings.Split(header, ",") {
		fields := strings.Split(part, ";")
		name := strings.ToLower(strings.TrimSpace(fields[0]))
		weight := 1.0
		for _, p := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
					weight = f
				} else {
					weight = 0 // a malformed weight is no consent
				}
			}
		}
		if name != "" {
			q[name] = weight
		}
	}
	best, bestQ := "", 0.0
	for _, enc := range []string{"br", "gzip"} {
		w, named := q[enc]
		if !named {
			w = q["*"]
		}
		if w > bestQ {
			best, bestQ = enc, w
		}
	}
	return best
}
