package e2e

import (
	"strconv"
	"testing"
)

// loginFailuresPerEmail is the stack's ceiling of failed password logins of one e-mail over
// all clients per window; loginFailures is the limit of one e-mail from one client.
const loginFailuresPerEmail = 8

// loginFailuresPerClient is the stack's limit of failed password logins of one client over
// all e-mails per window.
const loginFailuresPerClient = 12

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

// One client spraying a password over 50 e-mails meets its own window after
// loginFailuresPerClient failures, though each e-mail failed once; another client still
// signs in to one of those accounts, and the sprayer's client to nothing more.
func TestSprayOverManyEmailsMeetsTheClientWindow(t *testing.T) {
	owner := register(t)
	sprayer := newClientIP()
	refused := 0
	for i := range 50 {
		email := "spray" + itoa(i) + "." + dbPrefix + "@example.com"
		if i == 3 {
			email = owner.email
		}
		r, _ := loginAs(t, email, "Summer2026!", sprayer)
		switch {
		case i < loginFailuresPerClient:
			r.wantError(t, 401, "invalid email or password")
		default:
			wantLoginRefused(t, r)
			refused++
		}
	}
	if refused != 50-loginFailuresPerClient {
		t.Fatalf("%d attempts refused, want %d", refused, 50-loginFailuresPerClient)
	}
	// The right password from the sprayer's client is refused too: its window is full.
	r, _ := loginAs(t, owner.email, owner.password, sprayer)
	wantLoginRefused(t, r)
	if r, cookie := loginAs(t, owner.email, owner.password, newClientIP()); r.status != 200 || cookie == "" {
		t.Fatalf("the owner from another client: %d %s", r.status, r.body)
	}
}

// A client registering account after account meets the registration window (5 an hour by
// default); another client still registers.
func TestRegistrationFloodMeetsItsWindow(t *testing.T) {
	ip := newClientIP()
	body := func(i int) string {
		return `{"email":"flood` + itoa(i) + "." + dbPrefix + `@example.com","password":"s3cret-passphrase","first_name":"F","last_name":"L"}`
	}
	for i := range 5 {
		if r := do(t, "POST", "/api/auth/register", body(i), ip); r.status != 201 {
			t.Fatalf("registration %d: %d %s", i, r.status, r.body)
		}
	}
	r := do(t, "POST", "/api/auth/register", body(5), ip)
	r.wantError(t, 429, "too many registrations from this client")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if r := do(t, "POST", "/api/auth/register", body(5), newClientIP()); r.status != 201 {
		t.Fatalf("another client: %d %s", r.status, r.body)
	}
}
