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
	if f := focused(); f.Label != "Destination URL" || f.Outline == "none" {
		t.Fatalf("the first Tab focuses %+v, want the destination field with a visible outline", f)
	}
	b.do(chromedp.KeyEvent("https://example.com/by-keyboard"), chromedp.KeyEvent(kb.Enter))
	b.see(`[data-testid="create-result"]`, "to https://example.com/by-keyboard")
	b.eval(`document.querySelector('main h1').focus(); true`, nil)
	for i := 0; i < 12 && focused().Text != "Report a link"; i++ {
		b.do(chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
	}
	if f := focused(); f.Text != "Report a link" || f.Outline == "none" {
		t.Fatalf("Shift+Tab from the heading never reached the navigation's last link: %+v", f)
	}
	b.do(chromedp.KeyEvent(kb.Enter))
	b.see("main h1", "Report a link")
}
