package browser

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

var assetRef = regexp.MustCompile(`(?:src|href)="(/assets/app-[0-9a-f]{12}\.(?:js|css))"`)

// Through the running gateway: the page and its files carry the security and cache headers
// the contract names, compressed as asked; a refused visit is a page for a browser and the
// JSON envelope for everyone else, with the same status.
func TestPageAndVisitHeaders(t *testing.T) {
	page := call(t, "GET", "/", "", map[string]string{"Accept-Encoding": "identity"})
	h := page.Header
	csp := h.Get("Content-Security-Policy")
	if page.Status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || h.Get("Cache-Control") != "no-cache" ||
		!strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") ||
		h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "strict-origin-when-cross-origin" {
		t.Fatalf("GET / = %d %v", page.Status, h)
	}
	refs := assetRef.FindAllStringSubmatch(string(page.Body), -1)
	if len(refs) != 2 {
		t.Fatalf("the page names %d assets:\n%s", len(refs), page.Body)
	}
	for _, ref := range refs {
		a := call(t, "GET", ref[1], "", map[string]string{"Accept-Encoding": "gzip, deflate, br"})
		if a.Status != 200 || a.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || a.Header.Get("Content-Encoding") != "br" || a.Header.Get("ETag") == "" {
			t.Fatalf("GET %s = %d %v", ref[1], a.Status, a.Header)
		}
		if nm := call(t, "GET", ref[1], "", map[string]string{"If-None-Match": a.Header.Get("ETag")}); nm.Status != 304 {
			t.Fatalf("revalidating %s = %d", ref[1], nm.Status)
		}
	}

	// A disabled link and an unknown code (an expired one takes a day; webapp's unit tests
	// cover the 410 page).
	root := adminCookie(t)
	disabled := shortenAnon(t, "https://example.com/to-disable")
	if a := call(t, "POST", "/api/admin/links/"+disabled+"/disable", `{"reason":"test"}`, map[string]string{"Cookie": root}); a.Status != 200 {
		t.Fatalf("disable: %d %s", a.Status, a.Body)
	}
	const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for _, c := range []struct {
		code   string
		status int
		says   string
	}{{disabled, 403, "has been disabled"}, {"zz-unknown-code", 404, "does not exist"}} {
		got := call(t, "GET", "/"+c.code, "", map[string]string{"Accept": browserAccept})
		if got.Status != c.status || !strings.HasPrefix(got.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(got.Body), c.says) ||
			got.Header.Get("Content-Security-Policy") != csp || got.Header.Get("Cache-Control") != "private, no-store" {
			t.Fatalf("a browser's GET /%s = %d %v\n%s", c.code, got.Status, got.Header, got.Body)
		}
		api := call(t, "GET", "/"+c.code, "", map[string]string{"Accept": "application/json"})
		var env struct{ Error string }
		if api.Status != c.status || json.Unmarshal(api.Body, &env) != nil || env.Error == "" {
			t.Fatalf("an API client's GET /%s = %d %s", c.code, api.Status, api.Body)
		}
	}
}

func shortenAnon(t *testing.T, dest string) string {
	t.Helper()
	a := call(t, "POST", "/api/links/shorten", `{"url":"`+dest+`"}`, nil)
	var link struct {
		ShortCode string `json:"short_code"`
	}
	if err := json.Unmarshal(a.Body, &link); a.Status != 201 || err != nil {
		t.Fatalf("shorten: %d %s", a.Status, a.Body)
	}
	return link.ShortCode
}
