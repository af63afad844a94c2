package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// noRedirect lets tests see the 302 itself.
var client = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request to the gateway; ip, when set, is the client address a trusted proxy
// reports.
func do(t *testing.T, method, path, body, ip string) response {
	t.Helper()
	h := map[string]string{}
	if ip != "" {
		h["X-Forwarded-For"] = ip
	}
	return doWith(t, method, path, body, h)
}

// doWith sends a request with extra headers ("Cookie", "Origin", ...).
func doWith(t *testing.T, method, path, body string, headers map[string]string) response {
	t.Helper()
	a, err := stack.Send(client, gw, method, path, body, headers)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return response{status: a.Status, header: a.Header, body: a.Body}
}

// object decodes a JSON object body.
func (r response) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %q", r.body)
	}
	return m
}

// wantError asserts status and the exact one-field envelope.
func (r response) wantError(t *testing.T, status int, msg string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	m := r.object(t)
	if len(m) != 1 || m["error"] != msg {
		t.Fatalf("body %s, want {\"error\": %q}", r.body, msg)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
}

// shorten creates a link as an anonymous client at ip and returns its code.
func shorten(t *testing.T, ip, body string) (string, map[string]any) {
	t.Helper()
	r := do(t, "POST", "/api/links/shorten", body, ip)
	if r.status != 201 {
		t.Fatalf("shorten %s: %d %s", body, r.status, r.body)
	}
	m := r.object(t)
	code, _ := m["short_code"].(string)
	return code, m
}

// ipCounter hands each test its own client address, so quotas don't interfere.
var ipCounter = 1

func newClientIP() string {
	ipCounter++
	return "198.18." + itoa(ipCounter/250) + "." + itoa(ipCounter%250+1)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
