// Package urlcheck decides whether a URL is acceptable as the destination of a short link.
//
// A short link redirects whoever clicks it, so a destination pointing at loopback, private,
// link-local or otherwise internal addresses turns the service into a way of sending
// browsers (and link-preview bots, monitors and any future fetcher) at infrastructure they
// should never reach. The checks therefore mirror how browsers read a URL — WHATWG host
// parsing, IDNA mapping and every IPv4 notation inet_aton accepts — rather than how a strict
// RFC 3986 parser would, so that no spelling of an internal address slips through.
//
// The service never fetches destinations itself: DNS is consulted only to refuse names that
// resolve to internal addresses, and a failed lookup is not a reason to refuse a link.
package urlcheck

import (
	"github.com/hashicorp/golang-lru/v2/expirable"

	"context"
	"fmt"
	"net"
	"time"

	"golang.org/x/net/idna"
)

// MaxLength is the longest destination URL accepted, in bytes. For ASCII URLs — the usual
// case, as browsers percent-encode everything else — bytes and characters coincide; counting
// bytes keeps the bound on what is stored strict.
const MaxLength = 2048

// Resolver looks up a host name; *net.Resolver satisfies it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Error is a validation failure whose message is safe to show to the API caller, e.g. "url
// must use http or https". It never carries resolver output or other internal detail.
type Error struct{ Reason string }

// Error returns the caller-facing reason.
func (e *Error) Error() string { return e.Reason }

// The reasons Check can give. They are part of the API contract: clients see them verbatim.
const (
	reasonRequired    = "url is required"
	reasonTooLong     = "url must be at most 2048 characters"
	reasonSpaces      = "url must not contain spaces or control characters"
	reasonScheme      = "url must use http or https"
	reasonMalformed   = "url is not a valid URL"
	reasonNoHost      = "url must be an absolute URL with a host"
	reasonCredentials = "url must not contain user credentials"
	reasonPort        = "url has an invalid port"
	reasonHost        = "url has an invalid host"
	reasonInternal    = "url must not point to a private or internal address"
	reasonSelf        = "url must not point to this service"
)

// fail builds a fresh *Error so callers can never mutate a shared value.
func fail(reason string) *Error { return &Error{Reason: reason} }

// Validator checks destination URLs. It is safe for concurrent use.
type Validator struct {
	self     host // the service's own host, normalised like any destination
	resolver Resolver
	timeout  time.Duration
	profile  *idna.Profile
	// failed holds names that just resolved to nothing; nil remembers none.
	failed *expirable.LRU[string, struct{}]
}

// New builds a Validator. baseURL is the service's own public base (e.g.
// "http://localhost:8080" or "https://sho.rt"); links to its host are refused, whatever the
// port. lookupTimeout bounds each DNS lookup (callers pass 2s) and must be positive; a nil
// resolver means net.DefaultResolver.
func New(baseURL string, resolver Resolver, lookupTimeout time.Duration) (*Validator, error) {
	if lookupTimeout <= 0 {
		return nil, fmt.Errorf("urlcheck: lookup timeout must be positive, got %v", lookupTimeout)
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	v := &Validator{resolver: resolver, timeout: lookupTimeout, profile: newProfile()}
	self, err := v.parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("urlcheck: base URL %q: %w", baseURL, err)
	}
	v.self = self
	return v, nil
}

// Check returns nil when raw is an acceptable destination, or an *Error naming the problem.
// Names (not IP literals) are resolved under ctx, bounded by the lookup timeout.
func (v *Validator) Check(ctx context.Context, raw string) error {
	if err := v.check(ctx, raw); err != nil {
		return err
	}
	// Returned separately so a nil *Error never becomes a non-nil error interface.
	return nil
}

func (v *Validator) check(ctx context.Context, raw string) *Error {
	h, err := v.parse(raw)
	if err != nil {
		return err
	}
	// The own-host test comes first: for a base such as http://localhost:8080 it is the more
	// useful of the two reasons that apply.
	if h.equal(v.self) {
		return fail(reasonSelf)
	}
	if h.isAddr {
		if blocked(h.addr) {
			return fail(reasonInternal)
		}
	} else if isLocalName(h.name) {
		return fail(reasonInternal)
	}
	// These spellings were decoded only so that the checks above could see the address they
	// denote; no real host is written that way, so they are refused even when harmless.
	if h.percentDecoded || h.addr.Zone() != "" {
		return fail(reasonHost)
	}
	if !h.isAddr && v.resolvesInternal(ctx, h.name) {
		return fail(reasonInternal)
	}
	return nil
}
