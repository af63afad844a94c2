package captcha

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// A verifier that answers too much, too slowly, not at all, or fails gives no verdict: the
// call ends within its bound, having read at most maxVerdict bytes, as a 503 with a cause
// that says why.
func TestVerifierFailuresAreBounded(t *testing.T) {
	const bound = 500 * time.Millisecond
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		cause   string // regexp
	}{
		{"declared oversize", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(maxVerdict+1))
			_, _ = w.Write([]byte(`{"success":true,"x":"` + strings.Repeat("a", maxVerdict) + `"}`)[:maxVerdict+1])
		}, "exceeds 65536"},
		{"endless body", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"success":true}`))
			for r.Context().Err() == nil {
				if _, err := w.Write([]byte(strings.Repeat(" ", 4096))); err != nil {
					return
				}
			}
		}, "exceeds 65536 bytes"},
		{"never answers", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "Client.Timeout exceeded|deadline exceeded"},
		{"trickles", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"success":`))
			for r.Context().Err() == nil {
				w.(http.Flusher).Flush()
				_, _ = w.Write([]byte(" "))
				time.Sleep(20 * time.Millisecond)
			}
		}, "Client.Timeout exceeded|deadline exceeded"},
		{"server error", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, strings.Repeat("x", 1<<20), http.StatusBadGateway)
		}, "answered 502 Bad Gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The form is read first: until a request's body is read, the server cannot see
			// the client hang up, and a handler waiting on its context would wait forever.
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				tc.handler(w, r)
			}))
			t.Cleanup(srv.Close)
			v := New(srv.URL, "s3cret", http.DefaultTransport)
			v.hc.Timeout = bound
			token := "good"
			start := time.Now()
			err := v.Verify(context.Background(), &token)
			took := time.Since(start)
			e, ok := errs.As(err)
			if !ok || e.Kind != errs.KindUnavailable || e.Message != msgUnavailable || e.Err == nil ||
				!regexp.MustCompile(tc.cause).MatchString(e.Err.Error()) {
				t.Fatalf("Verify = %v; want 503 %q caused by %q", err, msgUnavailable, tc.cause)
			}
			if took > bound+time.Second {
				t.Fatalf("Verify took %v with a bound of %v", took, bound)
			}
		})
	}
}

// What the caller of a route gets: the error envelope with 503 when the verifier gives no
// verdict, 400 when it refuses the token.
func TestVerifierFailuresReachTheCallerAsTheEnvelope(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("response") == "slow" {
			<-r.Context().Done()
			return
		}
		_, _ = w.Write([]byte(`{"success":false}`))
	}))
	t.Cleanup(srv.Close)
	v := New(srv.URL, "s3cret", http.DefaultTransport)
	v.hc.Timeout = 300 * time.Millisecond
	app := fiber.New(fiber.Config{ErrorHandler: errs.Handler(slog.New(slog.DiscardHandler))})
	app.Post("/check/:token", func(c *fiber.Ctx) error {
		token := c.Params("token")
		if err := v.Verify(c.UserContext(), &token); err != nil {
			return err
		}
		return c.SendStatus(http.StatusNoContent)
	})
	for token, want := range map[string]struct {
		status int
		body   string
	}{
		"slow": {503, `{"error":"captcha verification unavailable"}`},
		"bad":  {400, `{"error":"captcha verification failed"}`},
	} {
		resp, err := app.Test(httptest.NewRequest(http.MethodPost, "/check/"+token, nil), 5000)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want.status || string(body) != want.body {
			t.Errorf("%s: %d %s; want %d %s", token, resp.StatusCode, body, want.status, want.body)
		}
	}
}
