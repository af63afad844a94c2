package accounts_test

import (
	"context"
	"errors"
	"sync"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// internal is the key material of the tests' services: the gateway names the callers, the
// fakes read who the calls made for them act for.
var internal = func() identity.KeySet {
	set, err := identity.GenerateKeySet(identity.Gateway, config.Auth, config.Link, config.Moderation)
	if err != nil {
		panic(err)
	}
	return set
}()

func keysOf(name string) *identity.Keys {
	k, err := identity.NewKeys(name, internal.Keys[name], internal.Certs)
	if err != nil {
		panic(err)
	}
	return k
}

// actingFor is the context of a request the gateway sent to auth for moderator id.
func actingFor(id string) context.Context {
	ctx, err := keysOf(identity.Gateway).WithCaller(context.Background(), identity.Caller{UserID: id, Role: identity.RoleModerator})
	if err != nil {
		panic(err)
	}
	tok, err := identity.TokenFor(ctx, config.Auth)
	if err != nil {
		panic(err)
	}
	return keysOf(config.Auth).Received(context.Background(), tok)
}

// actorOf is the user a call made with ctx to service acts for, as that service reads it;
// "" when its token is refused.
func actorOf(ctx context.Context, service string) string {
	tok, err := identity.TokenFor(ctx, service)
	if err != nil {
		return ""
	}
	c, err := keysOf(service).Verify(tok)
	if err != nil {
		return ""
	}
	return c.UserID
}

// auditCall is one audit write as the fake moderation service saw it: the record and the user
// its call acts for (the real service names the actor from it).
type auditCall struct {
	moderation.AuditRecord
	Token string
}

// fakeAudit is the moderation service's audit log: it keeps every record, or refuses every
// write while fail is set.
type fakeAudit struct {
	mu      sync.Mutex
	entries []auditCall
	fail    error
}

func (a *fakeAudit) Audit(ctx context.Context, rec moderation.AuditRecord) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail != nil {
		return a.fail
	}
	a.entries = append(a.entries, auditCall{AuditRecord: rec, Token: actorOf(ctx, config.Moderation)})
	return nil
}

func (a *fakeAudit) setFail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = err
}

// all returns the records written so far, oldest first.
func (a *fakeAudit) all() []auditCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]auditCall(nil), a.entries...)
}

// byAction returns the records of one action.
func (a *fakeAudit) byAction(action string) []auditCall {
	var out []auditCall
	for _, e := range a.all() {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

// fakeLinks is the link service: each owner has some enabled links, and a disable switches
// off what is left and says how many.
type fakeLinks struct {
	mu      sync.Mutex
	enabled map[string]int64
	calls   []disableCall
	fail    error
}

type disableCall struct {
	Owner, Reason, Token string
}

func newFakeLinks() *fakeLinks { return &fakeLinks{enabled: map[string]int64{}} }

func (l *fakeLinks) DisableOwner(ctx context.Context, ownerID string, req link.DisableRequest) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := disableCall{Owner: ownerID, Token: actorOf(ctx, config.Link)}
	if req.Reason != nil {
		c.Reason = *req.Reason
	}
	l.calls = append(l.calls, c)
	if l.fail != nil {
		return 0, l.fail
	}
	n := l.enabled[ownerID]
	l.enabled[ownerID] = 0
	return n, nil
}

func (l *fakeLinks) setEnabled(owner string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enabled[owner] = n
}

func (l *fakeLinks) setFail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fail = err
}

func (l *fakeLinks) all() []disableCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]disableCall(nil), l.calls...)
}

var errAuditDown = errors.New("moderation service unavailable")

// Export answers the links part of an export: one link of the caller's, named by the
// internal token ctx carries.
func (l *fakeLinks) Export(ctx context.Context) (link.Export, error) {
	if l.fail != nil {
		return link.Export{}, l.fail
	}
	return link.Export{Links: []link.ExportedLink{{Link: link.Link{ID: "l1", ShortCode: "abc1234", DestinationURL: "https://a.example"}}}}, nil
}

// DeleteAll stands for the link service's deletion of the caller's links and webhooks.
func (l *fakeLinks) DeleteAll(ctx context.Context) error { return l.fail }

// Forget stands for the moderation service's part of an account deletion.
func (a *fakeAudit) Forget(context.Context) error { return nil }
