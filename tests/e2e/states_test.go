package e2e

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/services/link/linktest"
)

// setLink changes a stored link through the link service's test seam, the way the moderation
// and renewal features will, and broadcasts the change as the link service does.
func setLink(t *testing.T, code string, ch linktest.Change) {
	t.Helper()
	if err := linktest.Set(context.Background(), serviceDB(t, "link"), redisClient(t), code, ch); err != nil {
		t.Fatalf("set link %s: %v", code, err)
	}
}

func ptr[T any](v T) *T { return &v }

// eventually polls the redirect until it answers want, failing after a second (the contract's
// bound for a change to reach every replica).
func eventually(t *testing.T, code string, want int) response {
	t.Helper()
	return eventuallyOn(t, gw, code, want)
}

// eventuallyOn is eventually on the gateway at base.
func eventuallyOn(t *testing.T, base, code string, want int) response {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		r := doOn(t, base, "GET", "/"+code)
		if r.status == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("/%s answered %d, want %d within 1s", code, r.status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRedirectFollowsLinkState(t *testing.T) {
	code, _ := shorten(t, newClientIP(), `{"url":"https://93.184.216.34/state"}`)
	eventually(t, code, 302) // warm the gateway cache

	setLink(t, code, linktest.Change{Status: ptr("DISABLED")})
	eventually(t, code, 403).wantError(t, 403, "short link has been disabled")
	// Info keeps answering, without the destination moderation took down.
	if info := do(t, "GET", "/api/links/"+code+"/info", "", "").object(t); info["status"] != "DISABLED" || info["short_code"] != code {
		t.Fatalf("info of a disabled link: %v", info)
	} else if dest, ok := info["destination_url"]; ok {
		t.Fatalf("info of a disabled link serves its destination %v", dest)
	}

	setLink(t, code, linktest.Change{Status: ptr("ACTIVE"), ExpiresAt: ptr(time.Now().Add(-time.Minute))})
	eventually(t, code, 410).wantError(t, 410, "short link has expired")
	if r := do(t, "GET", "/api/links/"+code+"/info", "", ""); r.object(t)["expired"] != true {
		t.Fatalf("info of an expired link: %s", r.body)
	}

	setLink(t, code, linktest.Change{AutoRenew: ptr(true)})
	eventually(t, code, 302)

	setLink(t, code, linktest.Change{DeletedAt: ptr(time.Now())})
	eventually(t, code, 404).wantError(t, 404, "short link not found")
	do(t, "GET", "/api/links/"+code+"/info", "", "").wantError(t, 404, "short link not found")
}

// setLinkExpired moves a link's expiry into the past, as time would.
func setLinkExpired(t *testing.T, code string) {
	t.Helper()
	setLink(t, code, linktest.Change{ExpiresAt: ptr(time.Now().Add(-time.Minute))})
}

// doOn sends a bodiless request to the gateway at base.
func doOn(t *testing.T, base, method, path string) response {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, base, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}
