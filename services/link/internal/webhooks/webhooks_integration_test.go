package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
	"github.com/linkmesh/linkmesh/services/link/internal/store"
	"github.com/linkmesh/linkmesh/services/link/internal/urlcheck"
	"github.com/linkmesh/linkmesh/services/link/internal/webhooks"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

type env struct {
	db    *mongo.Database
	st    *store.Webhooks
	svc   *webhooks.Service
	clock *clock
	// status is what the receiver answers; hits counts its requests.
	status atomic.Int32
	hits   atomic.Int32
	url    string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{clock: &clock{t: time.Now().UTC().Truncate(time.Millisecond)}}
	e.status.Store(http.StatusInternalServerError)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.hits.Add(1)
		w.WriteHeader(int(e.status.Load()))
	}))
	t.Cleanup(srv.Close)
	e.url = srv.URL + "/hook"
	e.db = testenv.Mongo(t)
	st, err := store.NewWebhooks(context.Background(), e.db)
	if err != nil {
		t.Fatal(err)
	}
	e.st = st
	checker, err := urlcheck.New("https://lnk.example", nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e.svc, err = webhooks.New(webhooks.Options{Store: st, Key: "0123456789abcdef0123456789abcdef", RetryBase: time.Millisecond,
		Guard: &webhooks.Guard{URLs: checker, Resolver: &netResolver{}, Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, LookupTimeout: time.Second},
		Now:   e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// netResolver resolves nothing: the tests' targets are addresses.
type netResolver struct{}

func (netResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, nil
}

var owner = identity.Caller{UserID: "u1", Role: identity.RoleUser}

func (e *env) hook(t *testing.T) link.Webhook {
	t.Helper()
	events := []string{link.EventCreated}
	out, err := e.svc.Create(context.Background(), owner, link.WebhookCreateRequest{URL: &e.url, Events: &events})
	if err != nil {
		t.Fatal(err)
	}
	return out.Webhook
}

func (e *env) publish(t *testing.T, events ...links.Published) {
	t.Helper()
	var msgs []stream.Message
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		msgs = append(msgs, stream.Message{ID: "1-0", Values: map[string]string{"event": string(b)}})
	}
	if err := e.svc.HandleEvents(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
}

func (e *env) deliveries(t *testing.T, id string) []link.Delivery {
	t.Helper()
	out, err := e.svc.Deliveries(context.Background(), owner, id, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return out.Deliveries
}

// An event handed over twice is one delivery; a receiver that keeps failing gets the whole
// schedule of attempts, then the delivery fails; after three days of nothing but failures
// the webhook is switched off, with its reason. Pings change nothing of that.
func TestRetriesAndAutoDisable(t *testing.T) {
	e := newEnv(t)
	h := e.hook(t)
	ev := links.Published{ID: "evt_1", Type: link.EventCreated, At: e.clock.Now(), OwnerID: "u1", Link: link.Link{ShortCode: "abc1234"}}
	e.publish(t, ev, ev)
	e.publish(t, ev, links.Published{ID: "evt_other_type", Type: link.EventDeleted, OwnerID: "u1"},
		links.Published{ID: "evt_other_owner", Type: link.EventCreated, OwnerID: "u2"})
	if ds := e.deliveries(t, h.ID); len(ds) != 1 || ds[0].EventID != "evt_1" || ds[0].Status != link.DeliveryPending {
		t.Fatalf("deliveries %+v", ds)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.svc.RunDeliveries(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	// 8 attempts in all (the first and 7 retries), each once the clock reaches it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		ds := e.deliveries(t, h.ID)
		if ds[0].Status == link.DeliveryFailed {
			if ds[0].Attempts != 8 || e.hits.Load() != 8 || *ds[0].LastStatusCode != 500 || *ds[0].LastError != "the receiver answered 500" {
				t.Fatalf("failed delivery %+v after %d requests", ds[0], e.hits.Load())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %+v after %d requests", ds[0], e.hits.Load())
		}
		// Within the 15 s a claim lasts, past every retry's wait (at most 5.76 s here).
		e.clock.Advance(6 * time.Second)
		time.Sleep(50 * time.Millisecond)
	}
	got, _ := e.st.HookByID(context.Background(), h.ID)
	if !got.Active || got.FailingSince == nil {
		t.Fatalf("after a day of failures: %+v", got)
	}
	// Three days on, the next failure switches it off.
	e.clock.Advance(72 * time.Hour)
	e.publish(t, links.Published{ID: "evt_2", Type: link.EventCreated, At: e.clock.Now(), OwnerID: "u1"})
	deadline = time.Now().Add(10 * time.Second)
	for {
		got, _ = e.st.HookByID(context.Background(), h.ID)
		if !got.Active {
			if got.DisabledReason == nil || *got.DisabledReason != "every delivery failed for 3 days" {
				t.Fatalf("disabled %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still active: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// An inactive webhook gets no new events, but its owner can still test it.
	e.publish(t, links.Published{ID: "evt_3", Type: link.EventCreated, OwnerID: "u1"})
	if ds := e.deliveries(t, h.ID); len(ds) != 2 {
		t.Fatalf("an inactive webhook got an event: %+v", ds)
	}
	e.status.Store(http.StatusOK)
	if err := e.svc.Test(context.Background(), owner, h.ID); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		ds := e.deliveries(t, h.ID)
		if slices.ContainsFunc(ds, func(d link.Delivery) bool { return d.Type == link.EventPing && d.Status == link.DeliveryDelivered }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ping %+v", ds)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got, _ := e.st.HookByID(context.Background(), h.ID); got.FailingSince == nil || got.Active {
		t.Fatalf("a ping changed the webhook's standing: %+v", got)
	}
}

// A delivery whose webhook is gone ends instead of being retried forever.
func TestDeliveryOfADeletedWebhookEnds(t *testing.T) {
	e := newEnv(t)
	h := e.hook(t)
	e.publish(t, links.Published{ID: "evt_1", Type: link.EventCreated, OwnerID: "u1"})
	ds, _, err := e.st.Deliveries(context.Background(), h.ID, 0, 10)
	if err != nil || len(ds) != 1 {
		t.Fatalf("%v %v", ds, err)
	}
	// The webhook goes, its deliveries' deletion does not happen (a crash in between).
	if _, err := e.svc.Deliveries(context.Background(), owner, h.ID, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if err := deleteHookOnly(e, h.ID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.svc.RunDeliveries(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds, _, _ := e.st.Deliveries(context.Background(), h.ID, 0, 10)
		if ds[0].Status == link.DeliveryFailed {
			if *ds[0].LastError != "the webhook was deleted" || e.hits.Load() != 0 {
				t.Fatalf("%+v", ds[0])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%+v", ds[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deleteHookOnly deletes the webhook document and nothing else.
func deleteHookOnly(e *env, id string) error {
	_, err := e.db.Collection("webhooks").DeleteOne(context.Background(), bson.D{{Key: "_id", Value: id}})
	return err
}
