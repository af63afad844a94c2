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

	// Enrich runs on one goroutine; these spare it work per click.
	agents  map[string]agent // parsed User-Agents, cleared when full
	hashDay string
	hash    hash.Hash // HMAC under hashDay's salt
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

// Enrich must be called from one goroutine at a time. It returns v's click, or false for a visit that is no click: a crawler or
// link-preview fetcher, as ua-parser's maintained list (uap-core) knows them, a headless
// browser, or a request without a User-Agent.
func (e *Enricher) Enrich(v Visit) (analytics.Click, bool) {
	if strings.TrimSpace(v.UserAgent) == "" {
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
	c.Visitor = e.visitor(c.ClickedAt.Format(time.DateOnly), v.IP, v.UserAgent)
	return c, true
}

// agent parses ua once and remembers it.
func (e *Enricher) agent(ua string) agent {
	if a, ok := e.agents[ua]; ok {
		return a
	}
	c := e.ua.Parse(ua)
	a := agent{robot: isRobot(c), device: deviceType(c), browser: orUnknown(c.UserAgent.Family), os: orUnknown(c.Os.Family)}
	if e.agents == nil || len(e.agents) >= maxAgents {
		e.agents = make(map[string]agent, 1024)
	}
	e.agents[ua] = a
	return a
}

// visitor is VisitorHash under day's salt, keeping the keyed hash of the day; "" when the
// salt cannot be had (the click still counts).
func (e *Enricher) visitor(day string, ip netip.Addr, ua string) string {
	if e.hashDay != day {
		if time.Now().Before(e.saltRetry) {
			return ""
		}
		salt, err := e.salts.Salt(day)
		if err != nil {
			e.saltRetry = time.Now().Add(5 * time.Second)
			return ""
		}
		e.hashDay, e.hash = day, hmac.New(sha256.New, salt)
	}
	e.hash.Reset()
	return visitorHash(e.hash, ip, ua)
}

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
func ReferrerHost(referer string) string {
	if referer == "" || len(referer) > 4096 {
		return analytics.Direct
	}
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

// visitorHash is the keyed hash of a visitor under a day's salt: the address (an IPv6
// address as its /64, which one household holds) and the User-Agent. Without the salt,
// destroyed after its day, it cannot be turned back into an address, nor matched with
// another day's.
func visitorHash(m hash.Hash, ip netip.Addr, userAgent string) string {
	ip = clientip.Household(ip)
	var buf [64]byte
	m.Write(ip.AppendTo(buf[:0]))
	m.Write([]byte{0})
	m.Write([]byte(userAgent))
	return hex.EncodeToString(m.Sum(buf[:0])[:16])
}
