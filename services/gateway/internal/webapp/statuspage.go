package webapp

import (
	"html"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

// WantsPage reports whether the client asked for a web page: its Accept names text/html,
// as every browser's navigation does. Other clients keep the JSON envelope.
func WantsPage(c *fiber.Ctx) bool {
	return strings.Contains(strings.ToLower(string(c.Request().Header.Peek(fiber.HeaderAccept))), "text/html")
}

// visitPages say what happened to a short link, by the status the visit gets.
var visitPages = map[int]struct{ title, text string }{
	fiber.StatusNotFound:  {"This short link does not exist", "No link has this code, or its owner deleted it. Check the address you followed."},
	fiber.StatusForbidden: {"This short link has been disabled", "A moderator disabled this link, usually because it was reported as harmful. Its destination is not shown."},
	fiber.StatusGone:      {"This short link has expired", "Its owner set it to expire, and it has. Only the owner can renew it."},
}

// Refused answers a visit to code that the redirect refused with err: a browser gets a small
// page with the same status; anything else, or a status without a page, returns err for the
// JSON envelope.
func (a *App) Refused(c *fiber.Ctx, code string, err error) error {
	status, _, _ := errs.Response(err)
	p, ok := visitPages[status]
	if !ok || !WantsPage(c) {
		return err
	}
	a.headers(c)
	c.Set(fiber.HeaderCacheControl, "private, no-store")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	title := html.EscapeString(p.title)
	// Only a possible code is shown back: the page must not carry whatever text a made-up
	// path holds.
	shown, report := "", "/#/report"
	if link.PlausibleCode(code) {
		shown = `<p class="muted">Short link: <span class="code">/` + html.EscapeString(code) + `</span></p>
`
		report += "?code=" + url.QueryEscape(code)
	}
	page := `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>` + title + ` · linkmesh</title><link rel="icon" href="data:,"><link rel="stylesheet" href="` + a.css + `"></head>
<body><main class="status-page"><h1>` + title + `</h1>
<p>` + html.EscapeString(p.text) + `</p>
` + shown + `<p><a href="` + html.EscapeString(report) + `">Report a link</a> · <a href="/">Shorten a link with linkmesh</a></p>
</main></body></html>
`
	return c.Status(status).SendString(page)
}
