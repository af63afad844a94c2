// Package analytics is the click event the gateway puts on the clicks stream and the typed
// client of the analytics service, which stores clicks and answers for them.
package analytics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
)

// Stream is the Redis stream clicks travel on, from the gateways to the analytics service.
const Stream = "clicks"

// Values a click records when it knows nothing better.
const (
	// Unknown is the country, device, browser or OS nobody could tell.
	Unknown = "Unknown"
	// Direct is the referrer of a visit no page sent (no Referer header).
	Direct = "direct"
	// Other stands for the referrers, browsers and OSes a link met after its first
	// MaxValues distinct ones of a month.
	Other = "(other)"
)

// MaxValues is how many distinct referrers, browsers and OSes each link's clicks record per
// calendar month (UTC); the clicks of later new values record Other. Every value becomes a
// field of the link's rollups, and any visitor can make up new ones.
const MaxValues = 100

// Device types of a click.
const (
	DeviceDesktop = "desktop"
	DeviceMobile  = "mobile"
	DeviceTablet  = "tablet"
)

// Click is one counted visit. It holds no client address: Visitor is a keyed hash under a
// salt that lives one day.
type Click struct {
	// EventID names the click for good, so storing it twice keeps it once.
	EventID    string
	LinkID     string
	OwnerID    string
	ShortCode  string
	ClickedAt  time.Time
	Country    string
	Referrer   string
	DeviceType string
	Browser    string
	OS         string
	// Visitor is empty when the day's salt could not be had; the click still counts.
	Visitor string
	// Client is the keyed hash of the visitor's address alone (an IPv6 address as its
	// /64) under the same salt: the click budget of a (client, link) counts by it. Empty
	// when the salt could not be had, or from gateways of the previous release; such a
	// click is not held to the budget.
	Client string
}

// Stream field names.
const (
	fEvent    = "event"
	fLink     = "link"
	fOwner    = "owner"
	fCode     = "code"
	fAt       = "at"
	fCountry  = "country"
	fReferrer = "referrer"
	fDevice   = "device"
	fBrowser  = "browser"
	fOS       = "os"
	fVisitor  = "visitor"
	fClient   = "client"
)

// fCompact holds a whole click in one field, its values in compactOrder separated by tabs
// after a version mark: one field costs Redis and both ends far less than eleven.
const (
	fCompact       = "c"
	compactVersion = "2"
	// compactVersion1 is the previous release's form: no client.
	compactVersion1 = "1"
)

var compactOrder = []string{fEvent, fLink, fOwner, fCode, fAt, fCountry, fReferrer, fDevice, fBrowser, fOS, fVisitor, fClient}

// Fields are c's stream fields: one compact field.
func (c Click) Fields() map[string]string {
	return map[string]string{fCompact: string(c.AppendCompact(make([]byte, 0, 160)))}
}

// CompactField is the stream field AppendCompact's value goes in.
const CompactField = fCompact

// MaxPerEntry is the most clicks one stream entry may hold: the gateway packs the clicks
// of a moment into one entry, one compact line each, which costs Redis and the analytics
// service one entry's work for all of them. A reader takes no more lines than this from an
// entry, whoever wrote it.
const MaxPerEntry = 64

// AppendCompact appends c's compact stream value (the CompactField of its entry) to dst,
// without allocating beyond dst's growth: the gateway encodes every click this way. A tab
// or a line break inside a value becomes a space, as they separate values and clicks. To
// pack several clicks in one entry, separate their values with a line break.
func (c Click) AppendCompact(dst []byte) []byte {
	dst = append(dst, compactVersion...)
	for i, v := range [...]string{c.EventID, c.LinkID, c.OwnerID, c.ShortCode, "", c.Country, c.Referrer, c.DeviceType, c.Browser, c.OS, c.Visitor, c.Client} {
		dst = append(dst, '\t')
		if i == 4 { // fAt, in compactOrder
			dst = strconv.AppendInt(dst, c.ClickedAt.UnixMilli(), 10)
			continue
		}
		for len(v) > 0 {
			sep := strings.IndexAny(v, "\t\n")
			if sep < 0 {
				dst = append(dst, v...)
				break
			}
			dst = append(append(dst, v[:sep]...), ' ')
			v = v[sep+1:]
		}
	}
	return dst
}

// Values are Fields for a producer's Enqueue or a plain XADD.
func (c Click) Values() map[string]any {
	out := make(map[string]any, 1)
	for k, v := range c.Fields() {
		out[k] = v
	}
	return out
}

// ClickFromValues reads a click back from its stream fields, compact or one field per
// value (as gateways of the previous release wrote them). An entry without an event id, a
// link or a valid time is no click.
//
// An entry's values are untrusted (anything that can write to the stream can write one): a
// value the gateway would never send (over maxValueLen bytes, not UTF-8, control characters,
// a time past the year 9999) makes the entry no click, rather than a click the store cannot
// keep.
func ClickFromValues(v map[string]string) (Click, error) {
	if packed, ok := v[fCompact]; ok {
		return fromCompact(packed)
	}
	return fromFields(v)
}

// ClicksFromValues reads every click of a stream entry: one per line of a compact value
// (at most MaxPerEntry), or the one click of an entry in the wide form. A line that is no
// click is left out, and said in the error; the other lines' clicks still count.
func ClicksFromValues(v map[string]string) ([]Click, error) {
	packed, ok := v[fCompact]
	if !ok {
		c, err := fromFields(v)
		if err != nil {
			return nil, err
		}
		return []Click{c}, nil
	}
	clicks := make([]Click, 0, strings.Count(packed, "\n")+1)
	var bad []error
	for line := range strings.SplitSeq(packed, "\n") {
		if len(clicks)+len(bad) == MaxPerEntry {
			bad = append(bad, fmt.Errorf("click entry: lines beyond the first %d left out", MaxPerEntry))
			break
		}
		c, err := fromCompact(line)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		clicks = append(clicks, c)
	}
	return clicks, errors.Join(bad...)
}

// fromCompact reads one compact line.
func fromCompact(line string) (Click, error) {
	parts := strings.Split(line, "\t")
	order := compactOrder
	if len(parts) > 0 && parts[0] == compactVersion1 {
		order = compactOrder[:len(compactOrder)-1] // written by a gateway of the previous release
	} else if len(parts) > 0 && parts[0] != compactVersion {
		return Click{}, errors.New("click entry: unreadable compact form")
	}
	if len(parts) != len(order)+1 {
		return Click{}, errors.New("click entry: unreadable compact form")
	}
	v := make(map[string]string, len(order))
	for i, name := range order {
		v[name] = parts[i+1]
	}
	return fromFields(v)
}

// fromFields reads a click from one field per value.
func fromFields(v map[string]string) (Click, error) {
	ms, err := strconv.ParseInt(v[fAt], 10, 64)
	if err != nil || ms <= 0 || ms > maxClickMillis {
		return Click{}, fmt.Errorf("click entry: bad time %q", v[fAt])
	}
	c := Click{EventID: v[fEvent], LinkID: v[fLink], OwnerID: v[fOwner], ShortCode: v[fCode],
		ClickedAt: time.UnixMilli(ms).UTC(), Country: v[fCountry], Referrer: v[fReferrer],
		DeviceType: v[fDevice], Browser: v[fBrowser], OS: v[fOS], Visitor: v[fVisitor], Client: v[fClient]}
	if c.EventID == "" || c.LinkID == "" {
		return Click{}, errors.New("click entry: no event id or link")
	}
	for _, f := range []string{c.EventID, c.LinkID, c.OwnerID, c.ShortCode, c.Country, c.Referrer, c.DeviceType, c.Browser, c.OS, c.Visitor, c.Client} {
		if !plainValue(f) {
			return Click{}, fmt.Errorf("click entry: a value of over %d bytes, not UTF-8, or with control characters", maxValueLen)
		}
	}
	for _, f := range []*string{&c.Country, &c.DeviceType, &c.Browser, &c.OS} {
		if *f == "" {
			*f = Unknown
		}
	}
	if c.Referrer == "" {
		c.Referrer = Direct
	}
	return c, nil
}

// Day is one day of a link's clicks.
type Day struct {
	Date           string `json:"date"`
	Clicks         int64  `json:"clicks"`
	UniqueVisitors int64  `json:"unique_visitors"`
}

// Share is one value of a breakdown with its clicks.
type Share struct {
	Value  string `json:"value"`
	Clicks int64  `json:"clicks"`
}

// LinkAnalytics is the answer of GET /api/user/links/{code}/analytics.
type LinkAnalytics struct {
	ShortCode        string  `json:"short_code"`
	TotalClicks      int64   `json:"total_clicks"`
	UniqueVisitors   int64   `json:"unique_visitors"`
	From             string  `json:"from"`
	To               string  `json:"to"`
	Timeseries       []Day   `json:"timeseries"`
	Countries        []Share `json:"countries"`
	Referrers        []Share `json:"referrers"`
	Devices          []Share `json:"devices"`
	Browsers         []Share `json:"browsers"`
	OperatingSystems []Share `json:"operating_systems"`
}

// Days bounds of the analytics query.
const (
	DefaultDays = 30
	MaxDays     = 365
)

// ParseDays reads the days of an analytics query: 1–MaxDays, DefaultDays when absent.
func ParseDays(raw string) (int, error) {
	if raw == "" {
		return DefaultDays, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > MaxDays {
		return 0, errs.Invalid("days must be an integer between 1 and %d", MaxDays)
	}
	return n, nil
}

// CountsRequest asks for the click totals of links, and of an owner's links.
type CountsRequest struct {
	LinkIDs []string `json:"link_ids"`
	OwnerID string   `json:"owner_id,omitempty"`
}

// Counts are click totals: per link id asked for (0 when none), and the owner's.
type Counts struct {
	Links map[string]int64 `json:"links"`
	Owner int64            `json:"owner"`
}

// MaxCountLinks bounds the links of one counts request (a page of a list).
const MaxCountLinks = 100

// Client calls the analytics service.
type Client struct{ hc *httpclient.Client }

// New wraps an HTTP client pointed at the analytics service.
func New(hc *httpclient.Client) *Client { return &Client{hc: hc} }

// Link answers for one link over the last days days (1–MaxDays), code being how the caller
// named it.
func (c *Client) Link(ctx context.Context, linkID, code string, days int) (LinkAnalytics, error) {
	q := url.Values{"code": {code}, "days": {strconv.Itoa(days)}}
	var out LinkAnalytics
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/analytics/links/" + url.PathEscape(linkID) + "?" + q.Encode()}, &out)
	return out, err
}

// Counts returns click totals. It only reads, so it may be retried.
func (c *Client) Counts(ctx context.Context, req CountsRequest) (Counts, error) {
	var out Counts
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/analytics/counts", Body: req, Idempotent: true}, &out)
	return out, err
}

// Purge deletes every click and rollup of a link; purging again does nothing.
func (c *Client) Purge(ctx context.Context, linkID string) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodDelete, Path: "/internal/analytics/links/" + url.PathEscape(linkID)}, nil)
}

// Totals are every link's clicks, for the admin overview.
type Totals struct {
	Total   int64 `json:"total"`
	Last24h int64 `json:"last_24h"`
}

// Totals returns every link's clicks, all time and over the last 24 hours. It only reads.
func (c *Client) Totals(ctx context.Context) (Totals, error) {
	var out Totals
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/analytics/totals", Idempotent: true}, &out)
	return out, err
}

// maxValueLen bounds each value of a click entry; the gateway's values are far shorter (a
// referrer is a host name, at most 253 bytes).
const maxValueLen = 512

// maxClickMillis is the last millisecond of the year 9999.
const maxClickMillis = 253402300799999

// plainValue tells a value fit to be stored and used as a field name once escaped.
func plainValue(s string) bool {
	if len(s) > maxValueLen || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
