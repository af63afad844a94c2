// Package clientip finds the client's address and turns it into an identity key, so that
// quotas can count a caller without any raw IP being stored or sent on.
package clientip

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Resolver picks the client address of a request.
type Resolver struct{ trusted []netip.Prefix }

// NewResolver trusts X-Forwarded-For only from peers inside trusted.
func NewResolver(trusted []netip.Prefix) *Resolver { return &Resolver{trusted: trusted} }

// ClientIP returns the socket peer, unless the peer is a trusted proxy: then it walks
// X-Forwarded-For from the right, skipping trusted proxies, and returns the first address that
// is not one. Fiber's own helper takes the leftmost entry, which the client can forge.
func (r *Resolver) ClientIP(peer netip.Addr, forwardedFor string) netip.Addr {
	peer = peer.Unmap()
	if !r.isTrusted(peer) || forwardedFor == "" {
		return peer
	}
	client := peer
	hops := strings.Split(forwardedFor, ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return client // a garbled entry: stop at the last address we could trust
		}
		client = a.Unmap()
		if !r.isTrusted(client) {
			return client
		}
	}
	return client
}

// FromRequest is ClientIP of a request, and whether its socket peer is a trusted proxy,
// whose edge headers (such as CF-IPCountry) may be believed. Every X-Forwarded-For line
// counts: a proxy that adds its own line must not leave the client's line in charge.
func (r *Resolver) FromRequest(c *fiber.Ctx) (client netip.Addr, viaProxy bool) {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	peer = peer.Unmap()
	if !r.isTrusted(peer) {
		return peer, false
	}
	lines := c.Request().Header.PeekAll(fiber.HeaderXForwardedFor)
	xff := make([]string, len(lines))
	for i, l := range lines {
		xff[i] = string(l)
	}
	return r.ClientIP(peer, strings.Join(xff, ",")), true
}

func (r *Resolver) isTrusted(a netip.Addr) bool {
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Household is the address that stands for a client: an IPv4 address as it is, an IPv6
// address as its /64, since one host or household usually holds a whole /64 and could
// otherwise rotate past any per-address count.
func Household(ip netip.Addr) netip.Addr {
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}

// Keyer derives identity keys: HMAC-SHA256 of the address under a server secret, hex-encoded.
type Keyer struct{ secret []byte }

// NewKeyer returns a Keyer for secret.
func NewKeyer(secret string) *Keyer { return &Keyer{secret: []byte(secret)} }

// Key returns the identity key of ip's Household.
func (k *Keyer) Key(ip netip.Addr) string {
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(Household(ip).String()))
	return hex.EncodeToString(m.Sum(nil))
}
