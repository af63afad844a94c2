package e2e

import (
	"strconv"
	"testing"
)

// loginFailuresPerEmail is the stack's ceiling of failed password logins of one e-mail over
// all clients per window; loginFailures is the limit of one e-mail from one client.
const loginFailuresPerEmail = 8

// wantLoginRefused checks the 429 of a full failed-login window and its Retry-After.
func wantLoginRefused(t *testing.T, r response) {
	t.Helper()
	r.wantError(t, 429, "too many failed login attempts")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
}

// A stranger who knows the e-mail fails from one client until refused: the owner, from
// their own client, still signs in, and the stranger's client still signs in to another
// account. The stranger's refused attempts do not count towards the e-mail's ceiling: they
// could go on for the whole window without locking the owner out.
func TestStrangerCannotLockTheOwnerOut(t *testing.T) {
	owner := register(t)
	stranger := newClientIP()
	for i := 0; i < loginFailures; i++ {
		r, _ := loginAs(t, owner.email, "wrong-password", stranger)
		r.wantError(t, 401, "invalid email or password")
	}
	for i := 0; i < loginFailuresPerEmail; i++ {
		r, _ := loginAs(t, owner.email, owner.password, stranger)
		wantLoginRefused(t, r)
	}
	if r, cookie := loginAs(t, owner.email, owner.password, newClientIP()); r.status != 200 || cookie == "" {
		t.Fatalf("the owner from another client: %d %s", r.status, r.body)
	}
	other := register(t)
	if r, _ := loginAs(t, other.email, other.password, stranger); r.status != 200 {
		t.Fatalf("the stranger's client with another account: %d %s", r.status, r.body)
	}
}

// Failures spread over many clients, each below the per-client limit, meet the e-mail's
// ceiling: then every client is refused for that e-mail, the owner's too, and only for it.
func TestLoginCeilingStopsASpreadAttack(t *testing.T) {
	owner := register(t)
	perClient := loginFailures - 1
	for failed := 0; failed < loginFailuresPerEmail; {
		ip := newClientIP()
		for i := 0; i < perClient && failed < loginFailuresPerEmail; i++ {
			r, _ := loginAs(t, owner.email, "wrong-password", ip)
			r.wantError(t, 401, "invalid email or password")
			failed++
		}
	}
	ownerIP := newClientIP()
	r, _ := loginAs(t, owner.email, owner.password, ownerIP)
	wantLoginRefused(t, r)
	other := register(t)
	if r, _ := loginAs(t, other.email, other.password, ownerIP); r.status != 200 {
		t.Fatalf("another account while the ceiling of the first is full: %d %s", r.status, r.body)
	}
}
