package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
)

// QuotaServer fakes the quota service's two internal routes for component tests of the
// services that reserve units: limit units per scope and key (or the reservation's own limit), released units free room, and
// every call must carry a valid internal token (the caller passes the gateway's on). A
// denied reservation says Retry-After 840 s of a 900 s window.
type QuotaServer struct {
	*httptest.Server
	mu    sync.Mutex
	limit int
	// limits overrides limit per scope. The windows of one client over many accounts
	// (registrations, failed logins over all e-mails) start out generous: component tests
	// register and sign in many accounts from one client; a test of those windows sets them.
	limits   map[string]int
	units    map[string]map[string]bool
	next     int
	keysSeen []string
}

// NewQuotaServer starts a fake quota service granting limit units per scope and key; it
// stops when the test ends.
func NewQuotaServer(t testing.TB, limit int) *QuotaServer {
	q := &QuotaServer{limit: limit, units: map[string]map[string]bool{},
		limits: map[string]int{quota.ScopeRegister: 1 << 20, quota.ScopeLoginClient: 1 << 20}}
	q.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := PeerCaller(t, r); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"internal token invalid"}`))
			return
		}
		switch r.URL.Path {
		case "/internal/quota/reserve":
			var req quota.ReserveRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			writeJSON(w, q.reserve(req))
		case "/internal/quota/usage":
			var req quota.ReserveRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			writeJSON(w, q.usage(req))
		case "/internal/quota/release":
			var req quota.ReleaseRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			q.release(req)
			writeJSON(w, map[string]string{"status": "released"})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(q.Close)
	return q
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (q *QuotaServer) reserve(r quota.ReserveRequest) quota.Reservation {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.keysSeen = append(q.keysSeen, r.Key)
	k := r.Scope + "|" + r.Key
	if q.units[k] == nil {
		q.units[k] = map[string]bool{}
	}
	limit := q.limitOf(r.Scope)
	if r.Limit != nil { // a per-caller scope brings its own limit
		limit = *r.Limit
	}
	if len(q.units[k]) >= limit {
		return quota.Reservation{Allowed: false, Limit: limit, Used: len(q.units[k]), RetryAfterSeconds: 840, WindowSeconds: 900}
	}
	q.next++
	id := fmt.Sprintf("1763730300000-%04d", q.next)
	q.units[k][id] = true
	return quota.Reservation{Allowed: true, ID: id, Limit: limit, Used: len(q.units[k]), WindowSeconds: 900}
}

// SetLimit makes scope grant n units per key from now on.
func (q *QuotaServer) SetLimit(scope string, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.limits[scope] = n
}

func (q *QuotaServer) limitOf(scope string) int {
	if n, ok := q.limits[scope]; ok {
		return n
	}
	return q.limit
}

func (q *QuotaServer) usage(r quota.ReserveRequest) quota.Reservation {
	q.mu.Lock()
	defer q.mu.Unlock()
	limit := q.limitOf(r.Scope)
	if r.Limit != nil {
		limit = *r.Limit
	}
	used := len(q.units[r.Scope+"|"+r.Key])
	return quota.Reservation{Limit: limit, Used: used, Remaining: max(0, limit-used), WindowSeconds: 900}
}

func (q *QuotaServer) release(r quota.ReleaseRequest) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.units[r.Scope+"|"+r.Key], r.ID)
}

// Used is how many units scope and key hold now.
func (q *QuotaServer) Used(scope, key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.units[scope+"|"+key])
}

// Seen lists the keys of every reservation asked for, in order.
func (q *QuotaServer) Seen() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.keysSeen...)
}

// Reset forgets every counted unit.
func (q *QuotaServer) Reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.units = map[string]map[string]bool{}
}
