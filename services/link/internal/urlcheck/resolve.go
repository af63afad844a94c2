package urlcheck

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// failedNames bounds how many names that resolved to nothing are remembered at once.
const failedNames = 10000

// RememberFailures makes v skip, for ttl, the lookup of a name whose last lookup found it
// does not exist or got no answer within the bound: a caller creating many links to one
// dead name waits for the bound once, not once per link. Such a name counts as "not
// internal" either way; what remembering costs is that a name which starts resolving to
// an internal address within ttl is let through until then. Other failures (a refused or
// failed query, the caller giving up) are not remembered. It returns v; ttl 0 turns it off.
// Call it before v is used.
func (v *Validator) RememberFailures(ttl time.Duration) *Validator {
	if ttl > 0 {
		v.failed = expirable.NewLRU[string, struct{}](failedNames, nil, ttl)
	}
	return v
}

// lookupResult carries a resolver's answer across the goroutine boundary.
type lookupResult struct {
	addrs []net.IPAddr
	err   error
}

// resolvesInternal reports whether name resolves to at least one blocked address. A name
// with both public and internal addresses is refused: which one a client ends up using is
// not ours to predict.
//
// Any lookup failure — NXDOMAIN, timeout, no reachable DNS server — counts as "not
// internal": the service never fetches destinations, so an unresolvable name is harmless,
// and refusing it would make link creation depend on DNS health.
func (v *Validator) resolvesInternal(ctx context.Context, name string) bool {
	if v.failed != nil {
		if _, ok := v.failed.Get(name); ok {
			return false
		}
	}
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, v.timeout)
	defer cancel()

	// The lookup runs in its own goroutine so that the timeout holds even for a Resolver
	// that ignores ctx; the buffered channel lets that goroutine finish and be collected
	// whenever the resolver eventually returns.
	done := make(chan lookupResult, 1)
	go func() {
		addrs, err := v.resolver.LookupIPAddr(ctx, name)
		done <- lookupResult{addrs: addrs, err: err}
	}()

	var res lookupResult
	select {
	case res = <-done:
	case <-ctx.Done():
		if caller.Err() == nil { // our own bound, not the caller leaving
			v.remember(name)
		}
		return false
	}
	if res.err != nil || len(res.addrs) == 0 {
		if caller.Err() == nil && deadName(res.err) {
			v.remember(name)
		}
		return false
	}
	for _, ip := range res.addrs {
		addr, ok := netip.AddrFromSlice(ip.IP)
		// An address the resolver could not even express correctly is not trusted.
		if !ok || blocked(addr) {
			return true
		}
	}
	return false
}

// deadName reports whether a lookup's failure says the name does not exist or went
// unanswered (nil: an empty answer), rather than that this one query failed.
func deadName(err error) bool {
	var dnsErr *net.DNSError
	switch {
	case err == nil, errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &dnsErr):
		return dnsErr.IsNotFound || dnsErr.IsTimeout
	}
	return false
}

func (v *Validator) remember(name string) {
	if v.failed != nil {
		v.failed.Add(name, struct{}{})
	}
}
