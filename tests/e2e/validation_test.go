package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Every refusal answers the envelope with the contract's status, and costs no quota.
func TestShortenRefusals(t *testing.T) {
	ip := newClientIP()
	cases := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"not json", `{"url":`, 400, "request body is not valid JSON"},
		{"empty body", ``, 400, "request body is required"},
		{"array body", `[1]`, 400, "request body must be a JSON object"},
		{"url missing", `{"expiration_days":3}`, 400, "url is required"},
		{"url wrong type", `{"url":42}`, 400, "url must be a string"},
		{"days wrong type", `{"url":"https://93.184.216.34","expiration_days":"7"}`, 400, "expiration_days must be an integer"},
		{"days fraction", `{"url":"https://93.184.216.34","expiration_days":1.5}`, 400, "expiration_days must be an integer"},
		{"days zero", `{"url":"https://93.184.216.34","expiration_days":0}`, 400, "expiration_days must be between 1 and 30"},
		{"days over anonymous max", `{"url":"https://93.184.216.34","expiration_days":31}`, 400, "expiration_days must be between 1 and 30"},
		{"ftp", `{"url":"ftp://93.184.216.34/f"}`, 400, "url must use http or https"},
		{"relative", `{"url":"/just/a/path"}`, 400, "url must use http or https"},
		{"credentials", `{"url":"https://user:pw@93.184.216.34/"}`, 400, "url must not contain user credentials"},
		{"too long", `{"url":"https://93.184.216.34/` + strings.Repeat("a", 2048) + `"}`, 400, "url must be at most 2048 characters"},
		{"loopback", `{"url":"http://127.0.0.1/"}`, 400, "url must not point to a private or internal address"},
		{"decimal loopback", `{"url":"http://2130706433/"}`, 400, "url must not point to a private or internal address"},
		{"octal private", `{"url":"http://0300.0250.0.1/"}`, 400, "url must not point to a private or internal address"},
		{"hex loopback", `{"url":"http://0x7f.1/"}`, 400, "url must not point to a private or internal address"},
		{"mapped ipv6", `{"url":"http://[::ffff:10.0.0.1]/"}`, 400, "url must not point to a private or internal address"},
		{"metadata", `{"url":"http://169.254.169.254/latest/meta-data"}`, 400, "url must not point to a private or internal address"},
		{"cgnat", `{"url":"http://100.64.0.1/"}`, 400, "url must not point to a private or internal address"},
		{"localhost", `{"url":"http://LOCALHOST./"}`, 400, "url must not point to a private or internal address"},
		{"sub.localhost", `{"url":"http://api.localhost/"}`, 400, "url must not point to a private or internal address"},
		{"resolves private", `{"url":"https://intranet.test/"}`, 400, "url must not point to a private or internal address"},
		{"resolves mixed", `{"url":"https://mixed.test/"}`, 400, "url must not point to a private or internal address"},
		{"ourselves", `{"url":"` + baseURL + `/abc1234"}`, 400, "url must not point to this service"},
		{"custom code anonymous", `{"url":"https://93.184.216.34","custom_code":"mine"}`, 403, "custom_code requires an account"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			do(t, "POST", "/api/links/shorten", tc.body, ip).wantError(t, tc.status, tc.msg)
		})
	}
	// None of the refusals above cost anything: the full quota is still there.
	for i := range 10 {
		if r := do(t, "POST", "/api/links/shorten", `{"url":"https://public.test/`+itoa(i)+`"}`, ip); r.status != 201 {
			t.Fatalf("creation %d after refusals: %d %s", i+1, r.status, r.body)
		}
	}
}

func TestUnresolvableNamesAreAcceptedQuickly(t *testing.T) {
	ip := newClientIP()
	shorten(t, ip, `{"url":"https://no-such-name.test/x"}`) // NXDOMAIN
	start := time.Now()
	shorten(t, ip, `{"url":"https://slow.example.test/x"}`) // the DNS server never answers
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("creation waited %s on DNS", d)
	}
}

// The server answers 413 from the headers and may close before a client finishes sending the
// body, so this speaks raw HTTP: send the headers and a first part, then read the answer.
func TestBodyLimit(t *testing.T) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(gw, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = fmt.Fprintf(conn, "POST /api/links/shorten HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"url\":\"", 64*1024+1)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	response{status: resp.StatusCode, header: resp.Header, body: b}.wantError(t, 413, "request body exceeds 64 KiB")
	if resp.Header.Get("X-Request-Id") == "" {
		t.Fatal("413 without X-Request-Id")
	}
}

func TestCompressedBodiesRefused(t *testing.T) {
	r := doWith(t, "POST", "/api/links/shorten", "\x1f\x8b\x08\x00", map[string]string{"Content-Encoding": "gzip"})
	r.wantError(t, 415, "Content-Encoding gzip is not supported")
}

func TestRoutingErrors(t *testing.T) {
	do(t, "GET", "/api/nothing/here", "", "").wantError(t, 404, "route not found")
	do(t, "GET", "/a/b", "", "").wantError(t, 404, "route not found")
	do(t, "POST", "/api/health", "{}", "").wantError(t, 405, "method not allowed")
	do(t, "DELETE", "/abc1234", "", "").wantError(t, 405, "method not allowed")
	do(t, "GET", "/api/links/shorten", "", "").wantError(t, 405, "method not allowed")
}

func TestRequestIDEcho(t *testing.T) {
	req, _ := http.NewRequest("GET", gw+"/api/health", nil)
	req.Header.Set("X-Request-Id", "client-chosen-42")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "client-chosen-42" {
		t.Fatalf("X-Request-Id %q, want the client's", got)
	}
}
