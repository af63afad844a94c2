package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// tab is one person's browser (its own cookies) showing one page at a time. It fails the
// test on any console error, uncaught exception, failed request or refused answer, but for
// the API answers the test said it expects (allow).
type tab struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	faults []string
	allow  []allowance
	// docStatus is the status of the last document the tab loaded (see pageStatus).
	docStatus int
}

type allowance struct {
	status int
	path   *regexp.Regexp
}

// open starts a fresh browser context (no cookies) for t.
func open(t *testing.T) *tab {
	t.Helper()
	b := &tab{t: t}
	// Nobody signed in gets 401 from /api/auth/me: that is how the app learns it.
	b.expect(401, `^/api/auth/me$`)
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext(), chromedp.WithListener(b.on))
	b.ctx = ctx
	t.Cleanup(func() {
		cancel()
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.faults) > 0 {
			t.Errorf("the browser saw %d fault(s):\n  %s", len(b.faults), strings.Join(b.faults, "\n  "))
		}
	})
	// The first run opens the tab, which lives as long as the context of that run: no timeout.
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, cdplog.Enable, cdp.Empty{})
		return err
	})); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	b.do(chromedp.EmulateViewport(1280, 900))
	return b
}

// expect lets API answers of status on paths matching the pattern through: the test drives
// the app into them on purpose (a refused action it then checks the page explains).
func (b *tab) expect(status int, pathPattern string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allow = append(b.allow, allowance{status, regexp.MustCompile(pathPattern)})
}

func (b *tab) allowed(status int, rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	for _, a := range b.allow {
		if a.status == status && a.path.MatchString(u.Path) {
			return true
		}
	}
	return false
}

var statusInLog = regexp.MustCompile(`status of (\d{3})`)

// on sees every event of the tab (on the tab's reading goroutine: it only records).
func (b *tab) on(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.faults = append(b.faults, fmt.Sprintf("exception: %s at %s:%d", msg, d.URL, d.LineNumber))
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert || e.Type == runtime.ConsoleAPICalledTypeWarning {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			b.faults = append(b.faults, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(parts, " ")))
		}
	case *cdplog.EventEntryAdded:
		if e.Entry.Level != cdplog.EntryLevelError && e.Entry.Level != cdplog.EntryLevelWarning {
			return
		}
		// Chromium logs every 4xx answer as an error; the ones the test expects are fine.
		if m := statusInLog.FindStringSubmatch(e.Entry.Text); e.Entry.Source == cdplog.EntrySourceNetwork && m != nil {
			if s, _ := strconv.Atoi(m[1]); b.allowed(s, e.Entry.URL) {
				return
			}
		}
		b.faults = append(b.faults, fmt.Sprintf("log %s/%s: %s %s", e.Entry.Source, e.Entry.Level, e.Entry.Text, e.Entry.URL))
	case *network.EventResponseReceived:
		if e.Type == network.ResourceTypeDocument {
			b.docStatus = int(e.Response.Status)
		}
		if s := int(e.Response.Status); s >= 400 && !b.allowed(s, e.Response.URL) {
			b.faults = append(b.faults, fmt.Sprintf("answer %d for %s", s, e.Response.URL))
		}
	case *network.EventLoadingFailed:
		if !e.Canceled {
			b.faults = append(b.faults, fmt.Sprintf("request failed: %s %s %s", e.Type, e.ErrorText, e.BlockedReason))
		}
	}
}

func (b *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// pageStatus is the HTTP status of the last document the tab loaded.
func (b *tab) pageStatus() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.docStatus
}

// eval runs a script in the page and decodes its value into out (nil: ignore it).
func (b *tab) eval(script string, out any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](script, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("browser: %s: %v", firstLine(script), err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("browser: %s gave %s: %v", firstLine(script), raw, err)
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// visit opens a path of the gateway (a fragment route such as "/#/links", or a short link).
func (b *tab) visit(path string) {
	b.t.Helper()
	// A navigation that changes only the fragment loads nothing: leave the page first, so a
	// visit always loads the app afresh, as a person opening a link does.
	b.do(chromedp.Navigate("about:blank"), chromedp.Navigate(gw+path))
	b.waitFor(`document.readyState === 'complete'`, "the page to load")
}

// route moves inside the app, as a click on a link would.
func (b *tab) route(fragment string) {
	b.t.Helper()
	b.eval(`location.hash = `+js(fragment)+`; true`, nil)
}

// waitFor polls a script until it is true (30 s at most: make test runs other stacks beside
// this one on two cores).
func (b *tab) waitFor(script, what string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		b.eval(`!!(`+script+`)`, &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var text string
			b.eval(`document.body ? document.body.innerText : ''`, &text)
			b.t.Fatalf("waited 30 s for %s; the page shows:\n%s", what, text)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// see waits until the element at selector shows text.
func (b *tab) see(selector, text string) {
	b.t.Helper()
	b.waitFor(`(document.querySelector(`+js(selector)+`)||{}).innerText && document.querySelector(`+js(selector)+`).innerText.includes(`+js(text)+`)`,
		fmt.Sprintf("%q in %s", text, selector))
}

// text returns what the element at selector shows ("" when there is none).
func (b *tab) text(selector string) string {
	b.t.Helper()
	var s string
	b.eval(`(document.querySelector(`+js(selector)+`)||{innerText:''}).innerText`, &s)
	return s
}

func js(v any) string {
	out, _ := json.Marshal(v)
	return string(out)
}

// helpers find controls the way a person does: by their label or their text.
const helpers = `
const lmScope = (scope) => { const r = scope ? document.querySelector(scope) : document; if (!r) throw new Error('no ' + scope); return r; };
const lmVisible = (el) => el.getClientRects().length > 0;
const lmControl = (label, scope) => {
  const root = lmScope(scope);
  const found = [];
  for (const l of root.querySelectorAll('label')) {
    if (l.textContent.trim() !== label) continue;
    const el = l.htmlFor ? document.getElementById(l.htmlFor) : l.querySelector('input,select,textarea');
    if (el) found.push(el);
  }
  for (const el of root.querySelectorAll('[aria-label]')) if (el.getAttribute('aria-label') === label && /^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName)) found.push(el);
  const visible = found.filter(lmVisible);
  if (visible.length !== 1) throw new Error(visible.length + ' controls labelled ' + JSON.stringify(label) + (scope ? ' in ' + scope : ''));
  return visible[0];
};
const lmClickable = (text, scope) => {
  const all = [...lmScope(scope).querySelectorAll('button, a, [role=button]')].filter(lmVisible)
    .filter((el) => el.textContent.trim() === text || el.getAttribute('aria-label') === text);
  if (all.length !== 1) throw new Error(all.length + ' buttons or links named ' + JSON.stringify(text) + (scope ? ' in ' + scope : ''));
  return all[0];
};
`

// fill types value into the control labelled label (a checkbox takes "true"/"false"; a
// select takes an option's value), within scope when given. It waits (10 s at most) for the
// control to appear (20 s at most): pages render after the data they show arrives.
func (b *tab) fill(label, value string, scope ...string) {
	b.t.Helper()
	b.retry("fill "+label, `
  const el = lmControl(`+js(label)+`, `+js(first(scope))+`);
  el.focus();
  if (el.type === 'checkbox') { if (String(el.checked) !== `+js(value)+`) el.click(); return ''; }
  const proto = el.tagName === 'SELECT' ? HTMLSelectElement.prototype : el.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, `+js(value)+`);
  el.dispatchEvent(new Event('input', { bubbles: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  if (el.value !== `+js(value)+`) return 'the control took ' + JSON.stringify(el.value);
  return '';`)
}

// click presses the one enabled button or link named text (its text or aria-label) within
// scope, waiting for it as fill does.
func (b *tab) click(text string, scope ...string) {
	b.t.Helper()
	b.retry("click "+text, `
  const el = lmClickable(`+js(text)+`, `+js(first(scope))+`);
  if (el.disabled) return 'disabled';
  el.focus();
  el.click();
  return '';`)
}

// retry runs body (which returns ” when done, or why not, or throws) until it is done.
func (b *tab) retry(what, body string) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var why string
		b.eval(`(() => { try {`+helpers+body+`} catch (e) { return String(e.message || e); } })()`, &why)
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: %s", what, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// value reads the value of the control at selector.
func (b *tab) value(selector string) string {
	b.t.Helper()
	var s string
	b.eval(`(document.querySelector(`+js(selector)+`)||{value:''}).value`, &s)
	return s
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// check runs axe-core on the page as it stands and fails on serious or critical
// violations, checks that it fits a 360 px screen, then writes its screenshots at 1280 and
// 390 px as name-<width>.png.
func (b *tab) check(name string) {
	b.t.Helper()
	var violations []string
	b.eval(`(async () => {
  if (typeof axe === 'undefined') { `+axe+` }
  const r = await axe.run(document, { resultTypes: ['violations'] });
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => v.impact + ' ' + v.id + ': ' + v.help + ' at ' + v.nodes.slice(0, 3).map((n) => n.target.join(' ') + ' (' + (n.failureSummary || '').replace(/\s+/g, ' ') + ')').join('; '));
})()`, &violations)
	if len(violations) > 0 {
		b.t.Errorf("axe on %s: %d serious or critical violation(s):\n  %s", name, len(violations), strings.Join(violations, "\n  "))
	}
	// Nothing may make a phone's page wider than its screen (tables scroll inside their box).
	b.do(chromedp.EmulateViewport(360, 800))
	time.Sleep(150 * time.Millisecond) // the chart follows the width
	var overflow struct {
		By     int
		Widest []string
	}
	b.eval(`(() => {
  const by = document.documentElement.scrollWidth - window.innerWidth;
  // The culprits: elements that reach past the screen inside a parent that does not.
  const past = (el) => el.getBoundingClientRect().right > window.innerWidth + 0.5;
  const scrolls = (el) => el && /auto|scroll|hidden/.test(getComputedStyle(el).overflowX);
  const first = [...document.body.querySelectorAll('*')].filter((el) => past(el) && el.parentElement && !past(el.parentElement) && !scrolls(el.parentElement));
  const name = (el) => el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).trim().replace(/\s+/g, '.') : '') + (el.id ? '#' + el.id : '');
  const shown = first.length ? first : [...document.body.querySelectorAll('*')].filter(past).slice(-5);
  return { By: by, Widest: shown.slice(0, 5).map((el) => name(el.parentElement) + ' > ' + name(el) + ' ' + Math.round(el.getBoundingClientRect().width) + 'px') };
})()`, &overflow)
	if overflow.By > 0 {
		b.t.Errorf("%s is %d px wider than a 360 px screen: %s", name, overflow.By, strings.Join(overflow.Widest, ", "))
	}
	for _, w := range []int64{1280, 390} {
		b.do(chromedp.EmulateViewport(w, 900, chromedp.EmulateScale(1)))
		time.Sleep(150 * time.Millisecond) // the chart follows the width
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			b.t.Fatalf("screenshot of %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shotDir, fmt.Sprintf("%s-%d.png", name, w)), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.do(chromedp.EmulateViewport(1280, 900))
}
