package links

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
	"github.com/linkmesh/linkmesh/pkg/server"
)

// Expiry bounds in days, per caller kind.
const (
	DefaultExpirationDays = 30
	MaxAnonymousDays      = 30
	MaxRegisteredDays     = 365
	generatedCodeAttempts = 5
)

// Options are the collaborators of a Service.
type Options struct {
	Store Store
	Cache Cache
	URLs  URLChecker
	Quota Quota
	// Clicks answers for the links' clicks (the analytics service).
	Clicks Clicks
	// Moderation keeps the audit log and the reports (the moderation service).
	Moderation Moderation
	// Keys sign the identity a deletion is finished under when no request carries it.
	Keys *identity.Keys
	// BaseURL is the public base of short links.
	BaseURL string
	Logger  *slog.Logger
	// Events receives the links' events from their outboxes (RunRelay); nil keeps them.
	Events EventSink
}

// Service applies the link rules over a store and a cache.
type Service struct {
	store      Store
	cache      Cache
	urls       URLChecker
	quota      Quota
	clicks     Clicks
	mod        Moderation
	keys       *identity.Keys
	log        *slog.Logger
	baseURL    string
	now        func() time.Time
	newCode    func() (string, error)
	events     EventSink
	kick       chan struct{}
	relayState relayState
}

// NewService wires the rules.
func NewService(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: o.Store, cache: o.Cache, urls: o.URLs, quota: o.Quota, clicks: o.Clicks, mod: o.Moderation, keys: o.Keys, log: o.Logger,
		baseURL: strings.TrimRight(o.BaseURL, "/"), now: time.Now, newCode: NewCode, events: o.Events, kick: make(chan struct{}, 1)}
}

// ShortURL is the public address of code.
func (s *Service) ShortURL(code string) string { return s.baseURL + "/" + code }

// Create stores a new link for caller. The cheap checks of the request come first; then one
// unit of the caller's creation quota is taken, before the destination is looked up, so a
// caller over its quota costs no DNS lookups; a creation that fails after that (a refused
// destination, a failed insert) gives the unit back, so only successful creations count.
func (s *Service) Create(ctx context.Context, caller identity.Caller, req link.CreateRequest) (Link, error) {
	l, _, err := s.CreateReporting(ctx, caller, req)
	return l, err
}

// CreateReporting is Create that also reports the caller's creation window after it (a
// zero window when no unit was taken: a replay of an Idempotency-Key).
func (s *Service) CreateReporting(ctx context.Context, caller identity.Caller, req link.CreateRequest) (Link, ratelimit.Window, error) {
	ctx, cancel := context.WithTimeout(ctx, link.CreateBudget)
	defer cancel()
	l, err := s.newLink(caller, req)
	if err != nil {
		return Link{}, ratelimit.Window{}, err
	}
	if req.IdempotencyKey != "" {
		if err := server.CheckIdempotencyKey(req.IdempotencyKey); err != nil {
			return Link{}, ratelimit.Window{}, err
		}
		l.ID, l.Request = idempotentID(caller, req.IdempotencyKey), fingerprint(req)
		if prev, found, err := s.replay(ctx, l.ID, l.Request); found || err != nil {
			// The first attempt's link, without another unit of quota: the window as it is.
			return prev, s.usage(ctx, caller), err
		}
	}
	unit, window, err := s.reserve(ctx, caller)
	if err != nil {
		return Link{}, ratelimit.Window{}, err
	}
	if err := s.urls.Check(ctx, req.URL); err != nil {
		s.release(ctx, unit)
		refused := errs.Invalid("%s", err.Error())
		window.Remaining++ // the unit is back
		refused.RateLimits = []ratelimit.Window{window}
		return Link{}, ratelimit.Window{}, refused
	}
	if l, err = s.insert(ctx, l, req.CustomCode); err != nil {
		s.release(ctx, unit)
		if errors.Is(err, errSameKey) {
			// A concurrent attempt with the same key won: answer as a retry would.
			prev, _, rerr := s.replay(ctx, idempotentID(caller, req.IdempotencyKey), fingerprint(req))
			return prev, ratelimit.Window{}, rerr
		}
		return Link{}, ratelimit.Window{}, err
	}
	// Drop every cached "unknown code" answer for a code that now exists.
	s.cache.Created(ctx, l.ShortCode)
	s.kickRelay(l.ID)
	return l, window, nil
}

// newLink checks the request's own fields for caller and returns the link to store, without
// its code unless custom; the destination is checked later, after the quota.
func (s *Service) newLink(caller identity.Caller, req link.CreateRequest) (Link, error) {
	if caller.EmailUnverified {
		return Link{}, errs.Forbidden(link.MsgVerifyEmail)
	}
	days, err := expirationDays(caller, req.ExpirationDays)
	if err != nil {
		return Link{}, err
	}
	if req.CustomCode != nil {
		if caller.IsAnonymous() {
			return Link{}, errs.Forbidden("custom_code requires an account")
		}
		if msg := checkCustomCode(*req.CustomCode); msg != "" {
			return Link{}, errs.Invalid("%s", msg)
		}
	}
	now := s.now().UTC().Truncate(time.Millisecond) // MongoDB keeps milliseconds
	l := Link{
		ID: bson.NewObjectID().Hex(), DestinationURL: req.URL, OwnerID: caller.UserID,
		CreatedAt: now, ExpiresAt: now.AddDate(0, 0, days), Status: link.StatusActive,
	}
	if l.OwnerID != "" {
		l.Outbox = []Event{NewEvent(link.EventCreated, now)}
	}
	return l, nil
}

// errSameKey is insert's answer when a concurrent attempt with the same Idempotency-Key
// stored its link first.
var errSameKey = errors.New("idempotency key already used")

// insert stores l under the custom code, or under a fresh generated one.
func (s *Service) insert(ctx context.Context, l Link, custom *string) (Link, error) {
	// With an Idempotency-Key the ID is the key's: a duplicate may be the key's link, stored
	// by a concurrent attempt, rather than the code's.
	keyed := l.Request != ""
	sameKey := func() bool {
		_, err := s.store.FindByID(ctx, l.ID)
		return keyed && err == nil
	}
	if custom != nil {
		l.ShortCode = *custom
		err := s.store.Insert(ctx, l)
		if errors.Is(err, ErrCodeTaken) && sameKey() {
			return Link{}, errSameKey
		}
		if errors.Is(err, ErrCodeTaken) {
			return Link{}, errs.E(errs.KindConflict, "custom_code is already taken")
		}
		if err != nil {
			return Link{}, fmt.Errorf("insert link: %w", err)
		}
		return l, nil
	}
	for range generatedCodeAttempts {
		var err error
		if !keyed {
			l.ID = bson.NewObjectID().Hex()
		}
		if l.ShortCode, err = s.newCode(); err != nil {
			return Link{}, fmt.Errorf("generate code: %w", err)
		}
		err = s.store.Insert(ctx, l)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, ErrCodeTaken) {
			return Link{}, fmt.Errorf("insert link: %w", err)
		}
		if sameKey() {
			return Link{}, errSameKey
		}
	}
	return Link{}, fmt.Errorf("insert link: %d code collisions in a row", generatedCodeAttempts)
}

func expirationDays(caller identity.Caller, requested *int) (int, error) {
	if requested == nil {
		return DefaultExpirationDays, nil
	}
	maxDays := MaxRegisteredDays
	if caller.IsAnonymous() {
		maxDays = MaxAnonymousDays
	}
	if *requested < 1 || *requested > maxDays {
		return 0, errs.Invalid("expiration_days must be between 1 and %d", maxDays)
	}
	return *requested, nil
}

// Resolve returns the redirect view of code from the cache or the store.
func (s *Service) Resolve(ctx context.Context, code string) (link.Resolved, error) {
	if !link.PlausibleCode(code) {
		return link.Resolved{}, errs.NotFound(link.MsgNotFound)
	}
	r, found, cached, version := s.cache.Get(ctx, code)
	if cached {
		if !found {
			return link.Resolved{}, errs.NotFound(link.MsgNotFound)
		}
		return r, nil
	}
	l, err := s.find(ctx, code)
	if errs.IsKind(err, errs.KindNotFound) {
		s.cache.Put(ctx, code, version, link.Resolved{}, false)
		return link.Resolved{}, err
	}
	if err != nil {
		return link.Resolved{}, err
	}
	r = l.Resolved()
	s.cache.Put(ctx, code, version, r, true)
	return r, nil
}

// Info returns the public information of code; a disabled link's destination is left out.
func (s *Service) Info(ctx context.Context, code string) (link.Info, error) {
	l, err := s.find(ctx, code)
	if err != nil {
		return link.Info{}, err
	}
	info := link.Info{
		ShortCode: l.ShortCode, ShortURL: s.ShortURL(l.ShortCode), DestinationURL: l.DestinationURL,
		Status: l.Status, Expired: l.Expired(s.now()), AutoRenew: l.AutoRenew,
		CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt,
	}
	if l.Status == link.StatusDisabled {
		info.DestinationURL = ""
	}
	return info, nil
}

// find returns the live (not soft-deleted) link with code.
func (s *Service) find(ctx context.Context, code string) (Link, error) {
	if !link.PlausibleCode(code) {
		return Link{}, errs.NotFound(link.MsgNotFound)
	}
	l, err := s.store.FindByCode(ctx, code)
	if errors.Is(err, ErrNotFound) || (err == nil && (l.DeletedAt != nil || l.Purge != nil)) {
		return Link{}, errs.NotFound(link.MsgNotFound)
	}
	if err != nil {
		return Link{}, fmt.Errorf("find link: %w", err)
	}
	return l, nil
}
