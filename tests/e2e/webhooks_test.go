package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/linkmesh/linkmesh/services/link/linktest"
)

// received is one request a test receiver got.
type received struct {
	id, typ string
	body    []byte
	header  http.Header
	at      time.Time
}

// receiver is a local webhook receiver: each path answers as its behaviour says.
type receiver struct {
	url string
	mu  sync.Mutex
	got map[string][]received // path → requests
	// failFirst makes a path answer 500 to its first n requests.
	failFirst map[string]int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{got: map[string][]received{}, failFirst: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r.url = "http://" + ln.Addr().String()
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var env struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(body, &env)
	r.mu.Lock()
	r.got[req.URL.Path] = append(r.got[req.URL.Path], received{id: req.Header.Get("webhook-id"), typ: env.Type, body: body,
		header: req.Header.Clone(), at: time.Now()})
	fail := r.failFirst[req.URL.Path] >= len(r.got[req.URL.Path])
	r.mu.Unlock()
	switch {
	case strings.HasPrefix(req.URL.Path, "/hang"):
		select {
		case <-req.Context().Done():
		case <-time.After(20 * time.Second):
		}
		return
	case strings.HasPrefix(req.URL.Path, "/redirect"):
		http.Redirect(w, req, "/ok", http.StatusFound)
		return
	case fail:
		http.Error(w, "not now", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// wait returns the requests path got once cond holds for them, within d.
func (r *receiver) wait(t *testing.T, path string, d time.Duration, cond func([]received) bool) []received {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		r.mu.Lock()
		got := append([]received(nil), r.got[path]...)
		r.mu.Unlock()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			types := []string{}
			for _, g := range got {
				types = append(types, g.typ+"/"+g.id)
			}
			t.Fatalf("%s got %v within %s", path, types, d)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// ofType returns the requests of one event type.
func ofType(got []received, typ string) []received {
	var out []received
	for _, g := range got {
		if g.typ == typ {
			out = append(out, g)
		}
	}
	return out
}

// createWebhook registers url for the session and returns the webhook and its secret.
func createWebhook(t *testing.T, cookie, url string, events ...string) (map[string]any, string) {
	t.Helper()
	if len(events) == 0 {
		events = []string{"link.created", "link.updated", "link.renewed", "link.deleted", "link.disabled", "link.enabled", "link.purged", "link.expired"}
	}
	r := as(t, cookie, "POST", "/api/user/webhooks", `{"url":"`+url+`","events":["`+strings.Join(events, `","`)+`"]}`)
	if r.status != 201 {
		t.Fatalf("create webhook %s: %d %s", url, r.status, r.body)
	}
	m := r.object(t)
	secret, _ := m["secret"].(string)
	issuedSecrets = append(issuedSecrets, secret)
	return m["webhook"].(map[string]any), secret
}

// verify checks a delivery with the Standard Webhooks reference implementation.
func verify(t *testing.T, secret string, g received) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(g.body, g.header); err != nil {
		t.Fatalf("signature of %s does not verify: %v (%v)", g.id, err, g.header)
	}
}

func TestWebhookEvents(t *testing.T) {
	rcv := newReceiver(t)
	a := register(t)
	hook, secret := createWebhook(t, a.cookie, rcv.url+"/a")
	if !strings.HasPrefix(secret, "whsec_") || len(secret) != len("whsec_")+32 || hook["active"] != true ||
		hook["disabled_reason"] != nil || hook["url"] != rcv.url+"/a" || len(hook["events"].([]any)) != 8 {
		t.Fatalf("webhook %v secret %q", hook, secret)
	}
	code := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/hooked"}`).object(t)["short_code"].(string)
	as(t, a.cookie, "PATCH", "/api/user/links/"+code, `{"destination_url":"https://93.184.216.34/hooked2"}`)
	as(t, a.cookie, "POST", "/api/user/links/"+code+"/renew", `{"expiration_days":10}`)
	root := admin(t)
	as(t, root, "POST", "/api/admin/links/"+code+"/disable", `{"reason":"test"}`)
	as(t, root, "POST", "/api/admin/links/"+code+"/enable", "")
	as(t, a.cookie, "DELETE", "/api/user/links/"+code, "")
	as(t, root, "DELETE", "/api/admin/links/"+code, "")
	want := []string{"link.created", "link.updated", "link.renewed", "link.disabled", "link.enabled", "link.deleted", "link.purged"}
	got := rcv.wait(t, "/a", 10*time.Second, func(g []received) bool {
		for _, typ := range want {
			if len(ofType(g, typ)) == 0 {
				return false
			}
		}
		return true
	})
	for _, g := range got {
		verify(t, secret, g)
		var body struct {
			Type      string `json:"type"`
			Timestamp string `json:"timestamp"`
			Data      struct {
				Link map[string]any `json:"link"`
			} `json:"data"`
		}
		if err := json.Unmarshal(g.body, &body); err != nil || body.Data.Link["short_code"] != code || body.Data.Link["owner_id"] != nil {
			t.Fatalf("%s body %s", g.typ, g.body)
		}
		if _, err := time.Parse(time.RFC3339Nano, body.Timestamp); err != nil || !strings.HasPrefix(g.id, "evt_") {
			t.Fatalf("%s: timestamp %q id %q", g.typ, body.Timestamp, g.id)
		}
	}
	if u := ofType(got, "link.updated")[0]; !strings.Contains(string(u.body), "hooked2") {
		t.Fatalf("link.updated carries the new destination: %s", u.body)
	}
	// Another user's links are not this webhook's business.
	b := register(t)
	as(t, b.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/theirs"}`)

	// The expiry of an owned link is an event of its own, once.
	exp := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/expiring"}`).object(t)["short_code"].(string)
	setLinkExpired(t, exp)
	rcv.wait(t, "/a", 15*time.Second, func(g []received) bool { return len(ofType(g, "link.expired")) > 0 })
	time.Sleep(6 * time.Second) // another sweep: no second event
	got = rcv.wait(t, "/a", time.Second, func([]received) bool { return true })
	if n := len(ofType(got, "link.expired")); n != 1 {
		t.Fatalf("%d link.expired events", n)
	}
	for _, g := range got {
		if strings.Contains(string(g.body), "/theirs") {
			t.Fatalf("another user's link reached the webhook: %s", g.body)
		}
	}

	// The delivery log.
	r := as(t, a.cookie, "GET", "/api/user/webhooks/"+hook["id"].(string)+"/deliveries?page_size=100", "")
	list := r.object(t)
	ds := list["deliveries"].([]any)
	if r.status != 200 || len(ds) != len(want)+2 || list["total"] != float64(len(want)+2) { // + created and expired of exp
		t.Fatalf("deliveries %d %s", r.status, r.body)
	}
	for _, x := range ds {
		d := x.(map[string]any)
		if d["status"] != "delivered" || d["attempts"] != float64(1) || d["last_status_code"] != float64(204) || d["delivered_at"] == nil {
			t.Fatalf("delivery %v", d)
		}
	}
}

func TestWebhookRetriesTimeoutsAndPings(t *testing.T) {
	rcv := newReceiver(t)
	rcv.failFirst["/flaky"] = 2
	a := register(t)
	flaky, secret := createWebhook(t, a.cookie, rcv.url+"/flaky", "link.created")
	b := register(t)
	hang, _ := createWebhook(t, b.cookie, rcv.url+"/hang", "link.created")
	c := register(t)
	redirect, _ := createWebhook(t, c.cookie, rcv.url+"/redirect", "link.created")
	for _, who := range []account{a, b, c} {
		as(t, who.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/retry"}`)
	}
	// Two failures, then delivered: the same webhook-id every time.
	got := rcv.wait(t, "/flaky", 20*time.Second, func(g []received) bool { return len(g) >= 3 })
	if got[0].id != got[1].id || got[1].id != got[2].id || got[0].id == "" {
		t.Fatalf("retries changed the webhook-id: %s %s %s", got[0].id, got[1].id, got[2].id)
	}
	for _, g := range got {
		verify(t, secret, g)
	}
	if got[1].at.Sub(got[0].at) < 100*time.Millisecond || got[2].at.Sub(got[1].at) < 6*time.Second {
		t.Fatalf("retries came too soon: %v then %v", got[1].at.Sub(got[0].at), got[2].at.Sub(got[1].at))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := as(t, a.cookie, "GET", "/api/user/webhooks/"+flaky["id"].(string)+"/deliveries", "").object(t)["deliveries"].([]any)[0].(map[string]any)
		if d["status"] == "delivered" {
			if d["attempts"] != float64(3) || d["last_error"] != nil {
				t.Fatalf("flaky delivery %v", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flaky delivery %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A receiver that hangs is given up on within 5 s, and retried.
	rcv.wait(t, "/hang", 5*time.Second, func(g []received) bool { return len(g) >= 1 })
	deadline = time.Now().Add(10 * time.Second)
	for {
		d := as(t, b.cookie, "GET", "/api/user/webhooks/"+hang["id"].(string)+"/deliveries", "").object(t)["deliveries"].([]any)[0].(map[string]any)
		if d["attempts"] == float64(1) {
			if d["status"] != "pending" || d["last_error"] != "no answer within 5s" || d["last_status_code"] != nil {
				t.Fatalf("hanging delivery %v", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hanging delivery %v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A redirect is not followed: a failed attempt.
	rcv.wait(t, "/redirect", 5*time.Second, func(g []received) bool { return len(g) >= 1 })
	time.Sleep(300 * time.Millisecond)
	if n := len(rcv.wait(t, "/ok", 0, func([]received) bool { return true })); n != 0 {
		t.Fatalf("a redirect was followed %d times", n)
	}
	d := as(t, c.cookie, "GET", "/api/user/webhooks/"+redirect["id"].(string)+"/deliveries", "").object(t)["deliveries"].([]any)[0].(map[string]any)
	if d["last_status_code"] != float64(302) || d["last_error"] != "redirects are not followed" {
		t.Fatalf("redirected delivery %v", d)
	}

	// A test ping.
	if r := as(t, c.cookie, "POST", "/api/user/webhooks/"+redirect["id"].(string)+"/test", ""); r.status != 202 || string(r.body) != `{"status":"queued"}` {
		t.Fatalf("test: %d %s", r.status, r.body)
	}
	rcv.wait(t, "/redirect", 5*time.Second, func(g []received) bool { return len(ofType(g, "ping")) == 1 })
}

func TestWebhookRules(t *testing.T) {
	rcv := newReceiver(t)
	a := register(t)
	for body, msg := range map[string]string{
		`{"events":["link.created"]}`:                                                             "url is required",
		`{"url":"http://93.184.216.34/x","events":["link.created"]}`:                              "url must use https",
		`{"url":"https://10.0.0.1/x","events":["link.created"]}`:                                  "url must not point to a private or internal address",
		`{"url":"https://intranet.test/x","events":["link.created"]}`:                             "url must not point to a private or internal address",
		`{"url":"https://app.localhost/x","events":["link.created"]}`:                             "url must not point to a private or internal address",
		`{"url":"https://u:p@93.184.216.34/x","events":["link.created"]}`:                         "url must not contain user credentials",
		`{"url":"ftp://93.184.216.34/x","events":["link.created"]}`:                               "url must be an absolute https URL",
		`{"url":"https://93.184.216.34/x"}`:                                                       "events must list at least one of link.created, link.updated, link.renewed, link.deleted, link.disabled, link.enabled, link.purged, link.expired",
		`{"url":"https://93.184.216.34/x","events":["link.visited"]}`:                             `events: unknown event "link.visited" (known: link.created, link.updated, link.renewed, link.deleted, link.disabled, link.enabled, link.purged, link.expired)`,
		`{"url":"http://127.0.0.2:9/x","events":["link.created"]}`:                                "url must use https",
		`{"url":"https://127.0.0.2:9/x","events":["link.created"]}`:                               "url must not point to a private or internal address",
		`{"url":"` + baseURL + `/x","events":["link.created"]}`:                                   "url must not point to this service",
		`{"url":"https://` + strings.Repeat("a", 2050) + `.example/x","events":["link.created"]}`: "url must be at most 2048 characters",
	} {
		as(t, a.cookie, "POST", "/api/user/webhooks", body).wantError(t, 400, msg)
	}
	// Five at most; listed newest first; another user's are 404.
	ids := []string{}
	for i := range 5 {
		h, _ := createWebhook(t, a.cookie, rcv.url+"/n"+itoa(i), "link.created")
		ids = append(ids, h["id"].(string))
	}
	as(t, a.cookie, "POST", "/api/user/webhooks", `{"url":"`+rcv.url+`/six","events":["link.created"]}`).wantError(t, 409, "at most 5 webhooks per account")
	list := as(t, a.cookie, "GET", "/api/user/webhooks", "").object(t)["webhooks"].([]any)
	if len(list) != 5 || list[0].(map[string]any)["id"] != ids[4] || strings.Contains(string(as(t, a.cookie, "GET", "/api/user/webhooks", "").body), "secret") {
		t.Fatalf("list %v", list)
	}
	b := register(t)
	as(t, b.cookie, "DELETE", "/api/user/webhooks/"+ids[0], "").wantError(t, 404, "webhook not found")
	as(t, b.cookie, "POST", "/api/user/webhooks/"+ids[0]+"/test", "").wantError(t, 404, "webhook not found")
	as(t, b.cookie, "GET", "/api/user/webhooks/"+ids[0]+"/deliveries", "").wantError(t, 404, "webhook not found")
	if r := as(t, a.cookie, "DELETE", "/api/user/webhooks/"+ids[0], ""); r.status != 200 || string(r.body) != `{"status":"deleted"}` {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	as(t, a.cookie, "DELETE", "/api/user/webhooks/"+ids[0], "").wantError(t, 404, "webhook not found")
	as(t, a.cookie, "GET", "/api/user/webhooks/"+ids[1]+"/deliveries?page_size=101", "").wantError(t, 400, "page_size must be between 1 and 100")
	// A token needs webhooks:write.
	tok, _ := createToken(t, a.cookie, "hooks", "webhooks:write")
	if r := withToken(t, tok, "", "GET", "/api/user/webhooks", ""); r.status != 200 {
		t.Fatalf("list with a token: %d %s", r.status, r.body)
	}
}

// A name that passed at registration and later resolves to an internal address is refused
// at delivery: the address dialled is the address checked.
func TestWebhookDNSRebinding(t *testing.T) {
	a := register(t)
	hook, _ := createWebhook(t, a.cookie, "https://rebind.test/hook", "link.created")
	dnsServer.Set("rebind.test", netip.MustParseAddr("127.0.0.2"))
	t.Cleanup(func() { dnsServer.Set("rebind.test", netip.MustParseAddr("93.184.216.34")) })
	as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/rebound"}`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds := as(t, a.cookie, "GET", "/api/user/webhooks/"+hook["id"].(string)+"/deliveries", "").object(t)["deliveries"].([]any)
		if len(ds) == 1 && ds[0].(map[string]any)["attempts"] == float64(1) {
			d := ds[0].(map[string]any)
			if d["last_error"] != "the webhook's host resolves to a private or internal address" || d["status"] != "pending" {
				t.Fatalf("rebound delivery %v", d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no attempt: %v", ds)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An event written with its change survives the link service dying before it is relayed:
// the restarted service sends it, and it is delivered once by id.
func TestWebhookEventSurvivesACrash(t *testing.T) {
	rcv := newReceiver(t)
	a := register(t)
	createWebhook(t, a.cookie, rcv.url+"/crash", "link.updated", "link.renewed")
	code := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/crash"}`).object(t)["short_code"].(string)

	// A change acknowledged just before the process dies.
	as(t, a.cookie, "PATCH", "/api/user/links/"+code, `{"destination_url":"https://93.184.216.34/crash2"}`)
	services.KillService("link")
	// A change whose writer died between its write and the relay: the write, with its event
	// in the outbox, is all there is.
	ev := linktest.NewEvent("link.renewed", time.Now())
	setLink(t, code, linktest.Change{ExpiresAt: ptr(time.Now().Add(48 * time.Hour)), Event: &ev})
	if err := services.RestartService(context.Background(), "link"); err != nil {
		t.Fatal(err)
	}
	// What the killed replica's consumer held is taken over after 10 s.
	got := rcv.wait(t, "/crash", 30*time.Second, func(g []received) bool {
		return len(ofType(g, "link.updated")) >= 1 && len(ofType(g, "link.renewed")) >= 1
	})
	if r := ofType(got, "link.renewed"); r[0].id != ev.ID {
		t.Fatalf("the outbox event arrived as %s, want %s", r[0].id, ev.ID)
	}
	// Deliveries are keyed by event: one each in the log, whatever was sent twice.
	hooks := as(t, a.cookie, "GET", "/api/user/webhooks", "").object(t)["webhooks"].([]any)
	ds := as(t, a.cookie, "GET", "/api/user/webhooks/"+hooks[0].(map[string]any)["id"].(string)+"/deliveries", "").object(t)["deliveries"].([]any)
	seen := map[string]int{}
	for _, x := range ds {
		seen[x.(map[string]any)["event_id"].(string)]++
	}
	if len(ds) != 2 || seen[ev.ID] != 1 {
		t.Fatalf("deliveries %v", ds)
	}
}
