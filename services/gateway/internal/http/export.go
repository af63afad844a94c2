package http

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

// breakdowns are the breakdowns an export may hold, by their query value.
var breakdowns = map[string]func(analytics.LinkAnalytics) []analytics.Share{
	"countries":         func(a analytics.LinkAnalytics) []analytics.Share { return a.Countries },
	"referrers":         func(a analytics.LinkAnalytics) []analytics.Share { return a.Referrers },
	"devices":           func(a analytics.LinkAnalytics) []analytics.Share { return a.Devices },
	"browsers":          func(a analytics.LinkAnalytics) []analytics.Share { return a.Browsers },
	"operating_systems": func(a analytics.LinkAnalytics) []analytics.Share { return a.OperatingSystems },
}

const msgBreakdown = "breakdown must be one of none, countries, referrers, devices, browsers, operating_systems"

// exportAnalytics answers GET /api/user/links/{code}/analytics/export: the link's analytics
// (the link service checks the owner and days) as CSV, the daily series or one breakdown.
func (h *handlers) exportAnalytics(c *fiber.Ctx) error {
	breakdown := c.Query("breakdown", "none")
	pick, ok := breakdowns[breakdown]
	if !ok && breakdown != "none" {
		return errs.Invalid(msgBreakdown)
	}
	a, err := h.Links.Analytics(c.UserContext(), c.Params("code"), passQuery(c, "days"))
	if err != nil {
		return err
	}
	var rows [][]string
	if ok {
		rows = append(rows, []string{"value", "clicks"})
		for _, s := range pick(a) {
			rows = append(rows, []string{s.Value, strconv.FormatInt(s.Clicks, 10)})
		}
	} else {
		rows = append(rows, []string{"date", "clicks", "unique_visitors"})
		for _, d := range a.Timeseries {
			rows = append(rows, []string{d.Date, strconv.FormatInt(d.Clicks, 10), strconv.FormatInt(d.UniqueVisitors, 10)})
		}
	}
	body, err := csvOf(rows)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+a.ShortCode+`-analytics.csv"`)
	c.Set(fiber.HeaderCacheControl, "private, no-store")
	return c.Send(body)
}

// csvOf writes rows as RFC 4180 CSV. A cell a spreadsheet would read as a formula (starting
// with =, +, - or @, or a tab or carriage return, as OWASP lists) gets a leading ' so it
// stays text: referrers and user agents are visitors' input.
func csvOf(rows [][]string) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.UseCRLF = true
	for _, row := range rows {
		for i, cell := range row {
			if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
				row[i] = "'" + cell
			}
		}
		if err := w.Write(row); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}
