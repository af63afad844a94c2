package browser

import (
	"strings"
	"testing"
)

// "Sign in with Google" against a provider: the browser goes to its authorization endpoint
// and comes back with an ID token for the nonce it sent; the person is then signed in (a
// first sign-in makes the account). A refusal at the provider lands on the sign-in page with
// the provider's reason.
func TestSignInWithTheIdentityProvider(t *testing.T) {
	b := open(t)
	b.visit("/#/login")
	b.see("main", "Sign in with Google")
	b.check("login-with-idp")

	email := newEmail("oidc")
	issuer.SignInAs("sub-"+email, email)
	b.click("Sign in with Google")
	b.see(`[data-testid="current-user"]`, email)
	b.see("main h1", "Dashboard")
	// The token must leave the address and the history: one step back is the page the
	// provider answered to, without its fragment.
	b.eval(`history.back(); true`, nil)
	b.waitFor(`!location.hash.startsWith('#/dashboard')`, "the step back")
	var here string
	b.eval(`location.href`, &here)
	if strings.Contains(here, "id_token") || strings.Contains(here, "state=") {
		t.Fatalf("one step back the address is %q: the token stayed in the history", here)
	}

	other := open(t)
	other.visit("/#/login")
	issuer.Refuse()
	other.click("Sign in with Google")
	other.see("main", "Signing in with Google did not work: access_denied")
}
