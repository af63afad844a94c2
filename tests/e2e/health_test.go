package e2e

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// With the link or auth service gone, the gateway says so: health is 503 and calls that need
// the link service fail with 503 in the envelope, never a hang or a 500.
func TestHealthWhenADependencyIsDown(t *testing.T) {
	for _, down := range []string{"link", "auth"} {
		t.Run(down, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			svcs, err := stack.StartServices(ctx, stack.ServicesOptions{
				BinDir: stack.BinDir(), MongoURI: mongoURI, RedisURL: redisURL,
				DatabasePrefix: testenv.Name("e2e_down"), LogDir: t.TempDir(),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer svcs.Stop()
			get := func(path string) response {
				resp, err := client.Get(svcs.GatewayURL + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return response{status: resp.StatusCode, header: resp.Header, body: b}
			}
			if r := get("/api/health"); r.status != http.StatusOK {
				t.Fatalf("health before: %d %s", r.status, r.body)
			}
			svcs.StopService(down)
			get("/api/health").wantError(t, 503, down+" service unavailable")
			if down == "link" {
				get("/abcdefg").wantError(t, 503, "link service unavailable")
				get("/api/links/abcdefg/info").wantError(t, 503, "link service unavailable")
			}
		})
	}
}
