package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// peers fakes the two routes the auth service calls besides quota: the moderation
// service's audit write and the link service's disable of an owner's links. Like the real
// ones, they refuse a call without a valid internal token, and the audit log takes the
// actor, IP hash and User-Agent from that token, never from the record.
type peers struct {
	*httptest.Server
	mu        sync.Mutex
	entries   []moderation.AuditEntry
	enabled   map[string]int64 // owner → enabled links
	disabled  []string         // owners, one per call
	auditDown bool
	linksDown bool
}

func newPeers(t *testing.T) *peers {
	p := &peers{enabled: map[string]int64{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, err := testenv.PeerCaller(t, r)
		if err != nil {
			fail(w, http.StatusUnauthorized, identity.MsgTokenInvalid)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		switch owner, ok := strings.CutPrefix(r.URL.Path, "/internal/links/owners/"); {
		case r.URL.Path == "/internal/moderation/audit":
			if p.auditDown {
				fail(w, http.StatusServiceUnavailable, "mongodb unavailable")
				return
			}
			var rec moderation.AuditRecord
			_ = json.NewDecoder(r.Body).Decode(&rec)
			p.entries = append(p.entries, moderation.AuditEntry{ID: rec.ID, ActorID: caller.UserID, Action: rec.Action,
				TargetType: rec.TargetType, TargetID: rec.TargetID, Detail: rec.Detail, IPHash: caller.IPHash, UserAgent: caller.UserAgent})
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"status":"recorded"}`))
		case ok && strings.HasSuffix(owner, "/disable"):
			if p.linksDown {
				fail(w, http.StatusServiceUnavailable, "mongodb unavailable")
				return
			}
			owner = strings.TrimSuffix(owner, "/disable")
			n := p.enabled[owner]
			p.enabled[owner] = 0
			p.disabled = append(p.disabled, owner)
			_ = json.NewEncoder(w).Encode(link.OwnerDisabled{LinksDisabled: n})
		default:
			fail(w, http.StatusNotFound, "not found")
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// audit returns the entries recorded so far, oldest first.
func (p *peers) audit() []moderation.AuditEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]moderation.AuditEntry(nil), p.entries...)
}

func (p *peers) set(f func(p *peers)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *peers) disables() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.disabled...)
}
