package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/services/link/internal/urlcheck"
)

// Resolver looks up a host's addresses; *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard keeps webhook deliveries off internal addresses. A target is checked at
// registration by the destination rules, and again at every delivery against the address
// actually dialled, so a name that resolves elsewhere later (DNS rebinding) is refused.
// Addresses in Allowed (LINKMESH_WEBHOOK_ALLOWED_CIDRS) are the operator's own receivers:
// allowed, over plain HTTP too.
type Guard struct {
	URLs     *urlcheck.Validator
	Resolver Resolver
	Allowed  []netip.Prefix
	// LookupTimeout bounds a registration's lookup (a delivery's is within its 5 s).
	LookupTimeout time.Duration
}

// ParseCIDRs reads a comma-separated list of CIDRs (or single addresses).
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR or an address", f)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR: %w", f, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// allowed reports whether a is in the operator's allowed ranges.
func (g *Guard) allowed(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	for _, p := range g.Allowed {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// permitted reports whether a delivery may connect to a.
func (g *Guard) permitted(a netip.Addr) bool { return g.allowed(a) || !urlcheck.Blocked(a) }

// CheckTarget checks a webhook URL at registration: an absolute http(s) URL of at most
// 2,048 characters without credentials, whose host's addresses are all allowed (then plain
// HTTP may do), or else an https URL the destination rules accept.
func (g *Guard) CheckTarget(ctx context.Context, raw string) error {
	if len(raw) > urlcheck.MaxLength {
		return errs.Invalid("url must be at most %d characters", urlcheck.MaxLength)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "" {
		return errs.Invalid("url must be an absolute https URL")
	}
	if u.User != nil {
		return errs.Invalid("url must not contain user credentials")
	}
	if g.allAllowed(ctx, u.Hostname()) {
		return nil
	}
	if u.Scheme != "https" {
		return errs.Invalid("url must use https")
	}
	if err := g.URLs.Check(ctx, raw); err != nil {
		return errs.Invalid("%s", err.Error())
	}
	return nil
}

// allAllowed reports whether host is, or resolves only to, allowed addresses.
func (g *Guard) allAllowed(ctx context.Context, host string) bool {
	if len(g.Allowed) == 0 {
		return false
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return g.allowed(a)
	}
	ctx, cancel := context.WithTimeout(ctx, g.LookupTimeout)
	defer cancel()
	addrs, err := g.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if !g.allowed(a) {
			return false
		}
	}
	return true
}

// errNotPermitted refuses a connection to an internal address.
var errNotPermitted = errors.New("the webhook's host resolves to a private or internal address")

// DialContext connects to addr only through addresses a delivery may reach: it resolves the
// host itself and dials the permitted addresses it got, never the name, so the address
// checked is the address used.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = g.Resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	var d net.Dialer
	var last error = errNotPermitted
	for _, a := range addrs {
		if !g.permitted(a) {
			continue
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		last = err
	}
	return nil, last
}

// Delivery bounds, as the contract fixes them.
const (
	deliveryTimeout = 5 * time.Second
	maxResponseBody = 64 << 10
)

// Client is the HTTP client of deliveries: every connection through DialContext, no proxy,
// no redirect followed (a 3xx is a failed attempt), 5 s for the whole exchange.
func (g *Guard) Client() *http.Client {
	return &http.Client{
		Timeout: deliveryTimeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           g.DialContext,
			TLSHandshakeTimeout:   deliveryTimeout,
			ResponseHeaderTimeout: deliveryTimeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
