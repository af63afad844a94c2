package browser

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// With the keyboard alone: a page puts the focus on its heading, so the first Tab reaches the
// destination field (with a visible focus ring) and Enter in the form shortens the link;
// going back, Shift+Tab reaches the navigation, which Enter follows.
func TestKeyboardOnly(t *testing.T) {
	b := open(t)
	b.visit("/")
	b.see("main h1", "Shorten a link")
	// A page puts the focus on its heading once it has rendered.
	b.waitFor(`document.activeElement === document.querySelector('main h1')`, "the focus on the heading")
	focused := func() (f struct{ Text, Label, Outline string }) {
		b.eval(`(() => { const el = document.activeElement; const l = el.id && document.querySelector('label[for="' + el.id + '"]');
			return { Text: (el.innerText || '').trim(), Label: l ? l.textContent.trim() : '', Outline: getComputedStyle(el).outlineStyle }; })()`, &f)
		return f
	}
	b.do(chromedp.KeyEvent(kb.Tab))
	if f := focused(); f.Label != "Destination URL" || f.Outline != "solid" {
		t.Fatalf("the first Tab focuses %+v, want the destination field with the app's focus ring (solid)", f)
	}
	b.do(chromedp.KeyEvent("https://example.com/by-keyboard"), chromedp.KeyEvent(kb.Enter))
	b.see(`[data-testid="create-result"]`, "to https://example.com/by-keyboard")
	// Back from the heading: Register, Sign in, then the navigation's last link.
	b.eval(`document.querySelector('main h1').focus(); true`, nil)
	for _, want := range []string{"Register", "Sign in", "Report a link"} {
		b.do(chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
		if f := focused(); f.Text != want || f.Outline != "solid" {
			t.Fatalf("Shift+Tab focuses %+v, want %q with the focus ring", f, want)
		}
	}
	b.do(chromedp.KeyEvent(kb.Enter))
	b.see("main h1", "Report a link")
}
