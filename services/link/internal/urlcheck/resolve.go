package urlcheck

import (
	"context"
	"net"
	"net/netip"
)

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
		return false
	}
	if res.err != nil {
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
