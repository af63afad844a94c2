package browser

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A person adds a webhook on the integrations page, copies its secret, sends a test and
// reads the delivery in the log; the receiver got a signed request.
func TestWebhookFromTheIntegrationsPage(t *testing.T) {
	got := make(chan http.Header, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	b := open(t)
	registerVerified(t, b, newEmail("hooks"))
	b.route("/integrations")
	b.see("#webhooks", "No webhooks yet.")
	b.fill("Endpoint URL", receiver.URL+"/linkmesh")
	b.fill("link.created", "true")
	b.click("Add webhook")
	b.waitFor(`(document.querySelector('[data-testid="webhook-secret"]')||{value:''}).value.startsWith('whsec_')`, "the signing secret")
	b.see("#webhooks table", receiver.URL+"/linkmesh")
	b.click("Send test", "#webhooks table")
	b.see("#webhooks", "A test ping was queued")
	select {
	case h := <-got:
		if h.Get("webhook-id") == "" || !strings.HasPrefix(h.Get("webhook-signature"), "v1,") {
			t.Fatalf("the receiver got an unsigned request: %v", h)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the receiver got nothing 30 s after the test was sent")
	}
	b.click("Deliveries", "#webhooks table")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(b.text(`[data-testid="deliveries"]`), "delivered") {
		if time.Now().After(deadline) {
			t.Fatalf("the delivery log shows:\n%s", b.text(`[data-testid="deliveries"]`))
		}
		b.click("Refresh", `[data-testid="deliveries"]`)
		time.Sleep(500 * time.Millisecond)
	}
	b.check("integrations-webhook")
}
