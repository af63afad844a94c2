package e2e

import (
	"bytes"
	"fmt"
	"image/png"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	zxingqr "github.com/makiuchi-d/gozxing/qrcode"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/services/auth/authtest"
	"github.com/linkmesh/linkmesh/services/link/linktest"
)

// checkExport reads the link's analytics as CSV, the daily series and each breakdown, and
// compares them with the JSON answer got.
func checkExport(t *testing.T, cookie, code string, got analytics.LinkAnalytics) {
	t.Helper()
	r := as(t, cookie, "GET", "/api/user/links/"+code+"/analytics/export?days=7", "")
	if r.status != 200 || r.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		r.header.Get("Content-Disposition") != `attachment; filename="`+code+`-analytics.csv"` {
		t.Fatalf("export: %d %v %s", r.status, r.header, r.body)
	}
	want := "date,clicks,unique_visitors\r\n"
	for _, d := range got.Timeseries {
		want += fmt.Sprintf("%s,%d,%d\r\n", d.Date, d.Clicks, d.UniqueVisitors)
	}
	if string(r.body) != want {
		t.Fatalf("export\n%q\nwant\n%q", r.body, want)
	}
	for name, shares := range map[string][]analytics.Share{"countries": got.Countries, "referrers": got.Referrers,
		"devices": got.Devices, "browsers": got.Browsers, "operating_systems": got.OperatingSystems} {
		r := as(t, cookie, "GET", "/api/user/links/"+code+"/analytics/export?days=7&breakdown="+name, "")
		want := "value,clicks\r\n"
		for _, s := range shares {
			want += fmt.Sprintf("%s,%d\r\n", s.Value, s.Clicks)
		}
		if r.status != 200 || string(r.body) != want {
			t.Errorf("export of %s: %d\n%q\nwant\n%q", name, r.status, r.body, want)
		}
	}
	as(t, cookie, "GET", "/api/user/links/"+code+"/analytics/export?breakdown=cities", "").
		wantError(t, 400, "breakdown must be one of none, countries, referrers, devices, browsers, operating_systems")
	as(t, cookie, "GET", "/api/user/links/"+code+"/analytics/export?days=0", "").
		wantError(t, 400, "days must be an integer between 1 and 365")
	other := register(t)
	as(t, other.cookie, "GET", "/api/user/links/"+code+"/analytics/export", "").wantError(t, 404, "short link not found")
	// A token needs analytics:read.
	secret, _ := createToken(t, cookie, "export", "analytics:read")
	if r := withToken(t, secret, "", "GET", "/api/user/links/"+code+"/analytics/export?days=7", ""); r.status != 200 || string(r.body) != string(as(t, cookie, "GET", "/api/user/links/"+code+"/analytics/export?days=7", "").body) {
		t.Fatalf("export with a token: %d %s", r.status, r.body)
	}
}

func TestEditDestination(t *testing.T) {
	a := register(t)
	r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/before"}`)
	code := r.object(t)["short_code"].(string)
	eventually(t, code, 302)
	eventuallyOn(t, gw2, code, 302)

	before := time.Now().UTC().Add(-time.Second)
	r = as(t, a.cookie, "PATCH", "/api/user/links/"+code, `{"destination_url":"https://93.184.216.34/after"}`)
	if r.status != 200 {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	l := r.object(t)["link"].(map[string]any)
	changed, err := time.Parse(time.RFC3339Nano, fmt.Sprint(l["destination_changed_at"]))
	if l["destination_url"] != "https://93.184.216.34/after" || l["short_code"] != code || err != nil || changed.Before(before) || l["owner_id"] != nil {
		t.Fatalf("edited link %v", l)
	}
	// Every replica redirects to the new destination within a second.
	for _, base := range []string{gw, gw2} {
		deadline := time.Now().Add(time.Second)
		for {
			r := doOn(t, base, "GET", "/"+code)
			if r.status == 302 && r.header.Get("Location") == "https://93.184.216.34/after" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still sends /%s to %q", base, code, r.header.Get("Location"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The owner's list and the moderators' list show when it changed.
	list := as(t, a.cookie, "GET", "/api/user/links?q="+code, "").object(t)["links"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["destination_changed_at"] != l["destination_changed_at"] {
		t.Fatalf("owner's list: %v", list)
	}
	root := admin(t)
	alist := as(t, root, "GET", "/api/admin/links?q="+code, "").object(t)["links"].([]any)
	if len(alist) != 1 || alist[0].(map[string]any)["destination_changed_at"] != l["destination_changed_at"] {
		t.Fatalf("admin list: %v", alist)
	}
	// A link never edited has no destination_changed_at.
	fresh, _ := shorten(t, newClientIP(), `{"url":"https://93.184.216.34/never"}`)
	if strings.Contains(string(as(t, root, "GET", "/api/admin/links?q="+fresh, "").body), "destination_changed_at") {
		t.Fatal("an unedited link shows destination_changed_at")
	}

	// Refusals: validated as at creation; not the caller's; disabled.
	for body, msg := range map[string]string{
		`{}`: "destination_url is required",
		`{"destination_url":"ftp://93.184.216.34/x"}`:   "destination_url must use http or https",
		`{"destination_url":"http://127.0.0.1/admin"}`:  "destination_url must not point to a private or internal address",
		`{"destination_url":"https://intranet.test/x"}`: "destination_url must not point to a private or internal address",
		`{"destination_url":"` + baseURL + `/abc"}`:     "destination_url must not point to this service",
	} {
		as(t, a.cookie, "PATCH", "/api/user/links/"+code, body).wantError(t, 400, msg)
	}
	if r := as(t, a.cookie, "PATCH", "/api/user/links/"+code, `{"destination_url":7}`); r.status != 400 {
		t.Fatalf("a number: %d %s", r.status, r.body)
	}
	other := register(t)
	as(t, other.cookie, "PATCH", "/api/user/links/"+code, `{"destination_url":"https://93.184.216.34/x"}`).wantError(t, 404, "short link not found")
	setLink(t, code, linktest.Change{Status: ptr("DISABLED")})
	as(t, a.cookie, "PATCH", "/api/user/links/"+code, `{"destination_url":"https://93.184.216.34/x"}`).wantError(t, 403, "short link has been disabled")
	// A token with links:write edits.
	w, _ := createToken(t, a.cookie, "edit", "links:write")
	r = as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/tok"}`)
	code2 := r.object(t)["short_code"].(string)
	if r := withToken(t, w, "", "PATCH", "/api/user/links/"+code2, `{"destination_url":"https://93.184.216.34/tok2"}`); r.status != 200 {
		t.Fatalf("edit with a token: %d %s", r.status, r.body)
	}
}

// decodeQR reads a PNG QR code with an independent decoder.
func decodeQR(t *testing.T, b []byte) string {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := zxingqr.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Fatalf("decode QR: %v", err)
	}
	if img.Bounds().Dx() != 256 && img.Bounds().Dx() != 512 {
		t.Fatalf("image %v", img.Bounds())
	}
	return res.GetText()
}

func TestQRCode(t *testing.T) {
	code, _ := shorten(t, newClientIP(), `{"url":"https://93.184.216.34/qr"}`)
	r := do(t, "GET", "/api/links/"+code+"/qr", "", "")
	if r.status != 200 || r.header.Get("Content-Type") != "image/png" || r.header.Get("Cache-Control") != "public, max-age=86400" {
		t.Fatalf("qr: %d %v", r.status, r.header)
	}
	if got := decodeQR(t, r.body); got != baseURL+"/"+code {
		t.Fatalf("the QR code reads %q, want %q", got, baseURL+"/"+code)
	}
	r = do(t, "GET", "/api/links/"+code+"/qr?format=png&size=512&margin=0", "", "")
	if got := decodeQR(t, r.body); r.status != 200 || got != baseURL+"/"+code {
		t.Fatalf("qr 512: %d %q", r.status, got)
	}
	r = do(t, "GET", "/api/links/"+code+"/qr?format=svg&size=300", "", "")
	if r.status != 200 || r.header.Get("Content-Type") != "image/svg+xml" ||
		!regexp.MustCompile(`^<\?xml[^>]*>\n<svg xmlns="http://www.w3.org/2000/svg" width="300" height="300" viewBox="0 0 \d+ \d+"`).Match(r.body) {
		t.Fatalf("svg: %d %v %.200s", r.status, r.header, r.body)
	}
	for q, msg := range map[string]string{
		"format=gif": "format must be svg or png", "size=127": "size must be an integer between 128 and 1024",
		"size=1025": "size must be an integer between 128 and 1024", "size=abc": "size must be an integer between 128 and 1024",
		"margin=-1": "margin must be an integer between 0 and 16", "margin=17": "margin must be an integer between 0 and 16",
	} {
		do(t, "GET", "/api/links/"+code+"/qr?"+q, "", "").wantError(t, 400, msg)
	}
	do(t, "GET", "/api/links/nope12345/qr", "", "").wantError(t, 404, "short link not found")
	gone, _ := shorten(t, newClientIP(), `{"url":"https://93.184.216.34/qr-gone"}`)
	setLinkExpired(t, gone)
	eventually(t, gone, 410)
	do(t, "GET", "/api/links/"+gone+"/qr", "", "").wantError(t, 410, "short link has expired")
	off, _ := shorten(t, newClientIP(), `{"url":"https://93.184.216.34/qr-off"}`)
	setLink(t, off, linktest.Change{Status: ptr("DISABLED")})
	eventually(t, off, 403)
	do(t, "GET", "/api/links/"+off+"/qr", "", "").wantError(t, 403, "short link has been disabled")
	if r := do(t, "HEAD", "/api/links/"+code+"/qr", "", ""); r.status != 200 || len(r.body) != 0 {
		t.Fatalf("HEAD: %d %d bytes", r.status, len(r.body))
	}
}

func TestBulkCreation(t *testing.T) {
	a := register(t)
	custom := "bulk" + itoa(accountCounter)
	body := `{"links":[` +
		`{"url":"https://93.184.216.34/b0"},` +
		`{"url":"ftp://93.184.216.34/b1"},` +
		`{"url":"https://93.184.216.34/b2","custom_code":"` + custom + `","expiration_days":365},` +
		`{"url":"https://93.184.216.34/b3","custom_code":"` + custom + `"},` +
		`{"url":"http://10.0.0.1/b4"},` +
		`{"url":"https://93.184.216.34/b5","expiration_days":400},` +
		`{"url":"https://93.184.216.34/b6","custom_code":"api"}]}`
	r := as(t, a.cookie, "POST", "/api/links/bulk", body)
	if r.status != 200 {
		t.Fatalf("bulk: %d %s", r.status, r.body)
	}
	results := r.object(t)["results"].([]any)
	want := []struct {
		status int
		msg    string
	}{
		{201, ""}, {400, "url must use http or https"}, {201, ""}, {409, "custom_code is already taken"},
		{400, "url must not point to a private or internal address"}, {400, "expiration_days must be between 1 and 365"},
		{400, "custom_code is a reserved word"},
	}
	if len(results) != len(want) {
		t.Fatalf("%d results: %s", len(results), r.body)
	}
	for i, w := range want {
		res := results[i].(map[string]any)
		if res["index"] != float64(i) || res["status"] != float64(w.status) {
			t.Errorf("item %d: %v, want %d", i, res, w.status)
			continue
		}
		if w.status == 201 {
			l, _ := res["link"].(map[string]any)
			if l == nil || res["error"] != nil || l["destination_url"] != fmt.Sprintf("https://93.184.216.34/b%d", i) || l["owner_id"] != nil {
				t.Errorf("item %d: %v", i, res)
			}
			continue
		}
		if msg, _ := res["error"].(string); !strings.HasPrefix(msg, strings.TrimSuffix(w.msg, " is a reserved word")) || res["link"] != nil {
			t.Errorf("item %d: %v, want %q", i, res, w.msg)
		}
	}
	if l := results[2].(map[string]any)["link"].(map[string]any); l["short_code"] != custom {
		t.Errorf("custom code: %v", l)
	}
	// Two units spent, and reported.
	if s := r.header.Get("RateLimit"); !strings.HasPrefix(s, `"create";r=98;t=`) {
		t.Fatalf("RateLimit %q", s)
	}
	for _, i := range []int{0, 2} {
		c := results[i].(map[string]any)["link"].(map[string]any)["short_code"].(string)
		eventually(t, c, 302)
	}

	// The quota: with 3 units left, 5 valid items create 3 and refuse 2.
	b := register(t)
	setUser(t, b.id, authtest.Restriction{QuotaLimit: ptr(3)})
	items := make([]string, 5)
	for i := range items {
		items[i] = fmt.Sprintf(`{"url":"https://93.184.216.34/q%d"}`, i)
	}
	r = as(t, b.cookie, "POST", "/api/links/bulk", `{"links":[`+strings.Join(items, ",")+`]}`)
	statuses := []float64{}
	for _, x := range r.object(t)["results"].([]any) {
		statuses = append(statuses, x.(map[string]any)["status"].(float64))
	}
	if fmt.Sprint(statuses) != "[201 201 201 429 429]" {
		t.Fatalf("over the quota: %v %s", statuses, r.body)
	}
	if res := r.object(t)["results"].([]any)[3].(map[string]any); res["error"] != "monthly link quota exceeded" {
		t.Fatalf("429 item: %v", res)
	}

	// Idempotency-Key: a retry answers the same links without spending quota.
	c := register(t)
	h := map[string]string{"Cookie": "go_session=" + c.cookie, "Idempotency-Key": "bulk-retry-1"}
	body = `{"links":[{"url":"https://93.184.216.34/i0"},{"url":"https://93.184.216.34/i1"}]}`
	first := doWith(t, "POST", "/api/links/bulk", body, h)
	again := doWith(t, "POST", "/api/links/bulk", body, h)
	if first.status != 200 || again.status != 200 || string(first.body) != string(again.body) {
		t.Fatalf("retry:\n%s\n%s", first.body, again.body)
	}
	if d := as(t, c.cookie, "GET", "/api/user/dashboard", "").object(t)["quota"].(map[string]any); d["used"] != float64(2) {
		t.Fatalf("a retry spent quota: %v", d)
	}
	doWith(t, "POST", "/api/links/bulk", `{"links":[{"url":"https://93.184.216.34/other"}]}`, h).
		wantError(t, 422, "Idempotency-Key was already used with a different request")

	// Whole-request refusals.
	for _, body := range []string{`{}`, `{"links":[]}`, `{"links":[` + strings.Repeat(`{"url":"https://93.184.216.34/x"},`, 100) + `{"url":"https://93.184.216.34/x"}]}`} {
		as(t, a.cookie, "POST", "/api/links/bulk", body).wantError(t, 400, "links must hold between 1 and 100 items")
	}
	do(t, "POST", "/api/links/bulk", `{"links":[{"url":"https://93.184.216.34/x"}]}`, newClientIP()).wantError(t, 401, "authentication required")
	// A token with links:write creates; without it, 403.
	tok, _ := createToken(t, a.cookie, "bulk", "links:write")
	if r := withToken(t, tok, "", "POST", "/api/links/bulk", `{"links":[{"url":"https://93.184.216.34/t"}]}`); r.status != 200 || !strings.Contains(string(r.body), `"status":201`) {
		t.Fatalf("bulk with a token: %d %s", r.status, r.body)
	}
}
