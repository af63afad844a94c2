// Package clicks records the visits the redirect answered 302: the redirect hands over a raw
// Visit without parsing anything, and a background stage turns it into a privacy-preserving
// click (country, referring host, device, browser, OS, a daily visitor hash) that goes onto
// the clicks stream. The client's address is used here, in memory, and never leaves.
package clicks

import (
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"

	"hash"

	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unsafe"

	"github.com/ua-parser/uap-go/uaparser"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
)

// Visit is what the redirect hands over: the raw request facts, copied out of the request.
type Visit struct {
	LinkID, OwnerID, Code string
	At                    time.Time
	IP                    netip.Addr
	UserAgent, Referer    string
	// EdgeCountry is CF-IPCountry from a trusted proxy; empty otherwise.
	EdgeCountry string
	// EventID names the click for good, so storage keeps it once however often the stream
	// delivers it; the spool gives it (see spool.encode).
	EventID string
}

// Countries finds an address's country; *GeoIP satisfies it.
type Countries interface {
	Country(ip netip.Addr) string
}

// Enricher turns visits into clicks.
type Enricher struct {
	ua        *uaparser.Parser
	countries Countries
	salts     Salts

	// AppendClick runs on one goroutine; these spare it work per click.
	agents  map[string]agent // parsed User-Agents, cleared when full
	hashDay int64            // days since 1970 (UTC)
	hash    hash.Hash        // HMAC under hashDay's salt
	scratch []byte           // what hash takes, reused
	// saltRetry is when a salt that could not be had is asked for again: while Redis is
	// away, clicks go without a visitor rather than each wait for it.
	saltRetry time.Time
}

// agent is what a User-Agent tells.
type agent struct {
	robot               bool
	device, browser, os string
}

// maxAgents bounds the parsed User-Agents kept; real traffic repeats a few thousand over
// and over.
const maxAgents = 20000

// Salts gives the visitor-hash salt of a UTC day; it is shared by every gateway replica
// and destroyed after its day.
type Salts interface {
	Salt(day string) ([]byte, error)
}

// NewEnricher builds an Enricher. countries may be nil: every click then counts as
// analytics.Unknown country unless a trusted edge said otherwise.
func NewEnricher(countries Countries, salts Salts) (*Enricher, error) {
	p, err := uaparser.New() // the parses are kept in agents
	if err != nil {
		return nil, err
	}
	return &Enricher{ua: p, countries: countries, salts: salts}, nil
}

// AppendClick appends the compact stream value of v's click to dst, allocating nothing once
// the User-Agent is known, or reports false for a visit that is no click: a crawler or
// link-preview fetcher, as ua-parser's maintained list (uap-core) knows them, a headless
// browser, or a request without a User-Agent. It must be called from one goroutine at a
// time.
func (e *Enricher) AppendClick(dst []byte, v Visit) ([]byte, bool) {
	var visitor, client [visitorLen]byte
	c, ok := e.click(v, &visitor, &client)
	if !ok {
		return dst, false
	}
	return c.AppendCompact(dst), true
}

// click is v's click, its strings v's or constants but Visitor and Client, which are
// visitor's and client's.
func (e *Enricher) click(v Visit, visitor, client *[visitorLen]byte) (analytics.Click, bool) {
	if NoClient(v.UserAgent) {
		return analytics.Click{}, false // no browser sends none
	}
	ag := e.agent(v.UserAgent)
	if ag.robot {
		return analytics.Click{}, false
	}
	c := analytics.Click{
		EventID:    v.EventID,
		LinkID:     v.LinkID,
		OwnerID:    v.OwnerID,
		ShortCode:  v.Code,
		ClickedAt:  v.At.UTC(),
		Country:    e.country(v),
		Referrer:   ReferrerHost(v.Referer),
		DeviceType: ag.device,
		Browser:    ag.browser,
		OS:         ag.os,
	}
	if e.visitor(c.ClickedAt, v.IP, v.UserAgent, visitor) {
		c.Visitor = unsafe.String(&visitor[0], visitorLen)
		e.hash.Reset()
		_, e.scratch = appendClientHash(client[:0], e.hash, v.IP, e.scratch)
		c.Client = unsafe.String(&client[0], visitorLen)
	}
	return c, true
}

// NoClient reports a User-Agent no browser sends: none at all. Such a visit is no click,
// and the redirect does not hand it over.
func NoClient(userAgent string) bool { return strings.TrimSpace(userAgent) == "" }

// agent parses ua once and remembers it. ua may alias a buffer reused later: what is kept
// (here and in the parser's own caches) is a copy.
func (e *Enricher) agent(ua string) agent {
	if a, ok := e.agents[ua]; ok {
		return a
	}
	ua = strings.Clone(ua) // the parser keeps it in caches of its own
	c := e.ua.Parse(ua)
	a := agent{robot: isRobot(c), device: deviceType(c), browser: orUnknown(c.UserAgent.Family), os: orUnknown(c.Os.Family)}
	if e.agents == nil || len(e.agents) >= maxAgents {
		e.agents = make(map[string]agent, 1024)
	}
	e.agents[ua] = a
	return a
}

// visitor writes into out the VisitorHash of the visitor under the salt of at's UTC day,
// keeping the keyed hash of the day; false when the salt cannot be had (the click still
// counts).
func (e *Enricher) visitor(at time.Time, ip netip.Addr, ua string, out *[visitorLen]byte) bool {
	if day := at.Unix() / secondsPerDay; e.hash == nil || e.hashDay != day {
		if time.Now().Before(e.saltRetry) {
			return false
		}
		salt, err := e.salts.Salt(at.Format(time.DateOnly))
		if err != nil {
			e.saltRetry = time.Now().Add(5 * time.Second)
			return false
		}
		e.hashDay, e.hash = day, hmac.New(sha256.New, salt)
	}
	e.hash.Reset()
	_, e.scratch = appendVisitorHash(out[:0], e.hash, ip, ua, e.scratch)
	return true
}

const secondsPerDay = 24 * 60 * 60

func (e *Enricher) country(v Visit) string {
	if cc := strings.ToUpper(strings.TrimSpace(v.EdgeCountry)); validCountry(cc) {
		return cc
	}
	if e.countries != nil {
		if cc := strings.ToUpper(e.countries.Country(v.IP)); validCountry(cc) {
			return cc
		}
	}
	return analytics.Unknown
}

// validCountry accepts an ISO 3166-1 alpha-2 code; Cloudflare's XX (unknown) and T1 (Tor)
// are not countries.
func validCountry(cc string) bool {
	if len(cc) != 2 || cc == "XX" || cc == "T1" {
		return false
	}
	return cc[0] >= 'A' && cc[0] <= 'Z' && cc[1] >= 'A' && cc[1] <= 'Z'
}

// isRobot reports a crawler: uap-core files every bot, crawler and preview fetcher it
// knows under the device family "Spider"; headless browsers name themselves in the family.
func isRobot(c *uaparser.Client) bool {
	return c.Device.Family == "Spider" || strings.Contains(strings.ToLower(c.UserAgent.Family), "headless")
}

// deviceType maps ua-parser's device and OS to mobile, tablet or desktop.
func deviceType(c *uaparser.Client) string {
	dev, os := strings.ToLower(c.Device.Family), c.Os.Family
	switch {
	case strings.Contains(dev, "ipad") || strings.Contains(dev, "tablet") || strings.Contains(dev, "kindle"):
		return analytics.DeviceTablet
	case os == "iOS" || os == "Android" || strings.Contains(dev, "iphone") || strings.Contains(dev, "mobile"):
		return analytics.DeviceMobile
	case os == "Other" && c.UserAgent.Family == "Other":
		return analytics.Unknown
	}
	return analytics.DeviceDesktop
}

func orUnknown(s string) string {
	if s == "" || s == "Other" {
		return analytics.Unknown
	}
	return s
}

// ReferrerHost is the referring host of a Referer header, lower-case and without port,
// path or query (which may carry private tokens); analytics.Direct when there is none or
// it is no absolute http(s) URL.
//
// Referers are nearly all plain "https://host/…": those are read here directly, without
// url.Parse's allocations (a third of a click's enrichment); anything else (escapes,
// user info, IPv6 literals, odd characters) goes through url.Parse, and both ways give
// the same answer (TestReferrerHostFastPath).
func ReferrerHost(referer string) string {
	if referer == "" || len(referer) > 4096 {
		return analytics.Direct
	}
	if host, ok := plainReferrerHost(referer); ok {
		return host
	}
	return parsedReferrerHost(referer)
}

// parsedReferrerHost is ReferrerHost through url.Parse, for any referer.
func parsedReferrerHost(referer string) string {
	u, err := url.Parse(referer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return analytics.Direct
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if len(host) > 253 {
		return analytics.Direct
	}
	return host
}

// plainReferrerHost reads the host of a referer of the plain form http(s)://host[:port][/?#…]
// with a host of letters, digits, dots and hyphens, no control character, space or percent
// sign anywhere; false for any other form.
func plainReferrerHost(referer string) (string, bool) {
	rest, ok := strings.CutPrefix(referer, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(referer, "http://"); !ok {
			return "", false
		}
	}
	end := len(rest)
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c == '/' || c == '?' || c == '#' {
			end = i
			break
		}
	}
	for i := end; i < len(rest); i++ {
		if c := rest[i]; c < 0x21 || c == 0x7f || c == '%' {
			return "", false
		}
	}
	host, port, _ := strings.Cut(rest[:end], ":")
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return "", false
		}
	}
	lower := true
	for i := 0; i < len(host); i++ {
		switch c := host[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-':
		case c >= 'A' && c <= 'Z':
			lower = false
		default:
			return "", false
		}
	}
	host = strings.TrimSuffix(host, ".")
	switch {
	case host == "":
		return "", false
	case len(host) > 253:
		return analytics.Direct, true
	case !lower:
		return strings.ToLower(host), true
	}
	return host, true
}

// appendClientHash appends the keyed hash of the client's address alone under a day's salt,
// hex-encoded, as appendVisitorHash does with the User-Agent: the key of the click budget,
// which a visitor cannot dodge by changing User-Agents. Its input is marked apart from a
// visitor hash's, so the two never coincide.
func appendClientHash(dst []byte, m hash.Hash, ip netip.Addr, scratch []byte) (out, room []byte) {
	scratch = clientip.Household(ip).AppendTo(append(scratch[:0], "client\x00"...))
	m.Write(scratch)
	n := len(scratch)
	scratch = m.Sum(scratch)
	return hex.AppendEncode(dst, scratch[n:n+16]), scratch
}

// visitorLen is the length of a visitor hash: 16 bytes, hex-encoded.
const visitorLen = 32

// appendVisitorHash appends the keyed hash of a visitor under a day's salt, hex-encoded: the
// address (an IPv6 address as its /64, which one household holds) and the User-Agent.
// Without the salt, destroyed after its day, it cannot be turned back into an address, nor
// matched with another day's. scratch is room for the hashed bytes, returned for reuse.
func appendVisitorHash(dst []byte, m hash.Hash, ip netip.Addr, userAgent string, scratch []byte) (out, room []byte) {
	scratch = append(append(clientip.Household(ip).AppendTo(scratch[:0]), 0), userAgent...)
	m.Write(scratch)
	n := len(scratch)
	scratch = m.Sum(scratch) // the sum goes after the hashed bytes, in room that is kept
	return hex.AppendEncode(dst, scratch[n:n+16]), scratch
}
