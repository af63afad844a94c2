package e2e

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// setLink changes a stored link the way the moderation and renewal features will, then
// broadcasts the change as the link service does: drop its Redis copy, publish the code.
func setLink(t *testing.T, code string, set bson.D) {
	t.Helper()
	setStored(t, "link", "links", bson.D{{Key: "short_code", Value: code}}, set)
	ctx := context.Background()
	rdb := redisClient(t)
	if err := rdb.Incr(ctx, "linkmesh:link:version:"+code).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, "linkmesh:link:resolved:"+code).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Publish(ctx, "linkmesh:links:invalidate", code).Err(); err != nil {
		t.Fatal(err)
	}
}

// eventually polls the redirect until it answers want, failing after a second (the contract's
// bound for a change to reach every replica).
func eventually(t *testing.T, code string, want int) response {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		r := do(t, "GET", "/"+code, "", "")
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

	setLink(t, code, bson.D{{Key: "status", Value: "DISABLED"}})
	eventually(t, code, 403).wantError(t, 403, "short link has been disabled")

	setLink(t, code, bson.D{{Key: "status", Value: "ACTIVE"}, {Key: "expires_at", Value: time.Now().Add(-time.Minute)}})
	eventually(t, code, 410).wantError(t, 410, "short link has expired")
	if r := do(t, "GET", "/api/links/"+code+"/info", "", ""); r.object(t)["expired"] != true {
		t.Fatalf("info of an expired link: %s", r.body)
	}

	setLink(t, code, bson.D{{Key: "auto_renew", Value: 1}})
	eventually(t, code, 302)

	setLink(t, code, bson.D{{Key: "deleted_at", Value: time.Now()}})
	eventually(t, code, 404).wantError(t, 404, "short link not found")
	do(t, "GET", "/api/links/"+code+"/info", "", "").wantError(t, 404, "short link not found")
}
