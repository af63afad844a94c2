// Package captcha verifies captcha tokens with a siteverify endpoint (hCaptcha, Turnstile and
// reCAPTCHA all take a form POST of secret and response and answer {"success": bool}).
package captcha

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
)

// ErrFailed is the one answer a caller gets for a missing, rejected or unverifiable token.
var ErrFailed = errs.Invalid("captcha verification failed")

// maxToken bounds what we forward; real tokens are a few kilobytes at most.
const maxToken = 8192

// maxVerdict bounds what is read of the verifier's answer; real ones are a few hundred bytes.
const maxVerdict = 64 << 10

// timeout bounds one verification, reading the answer included.
const timeout = 5 * time.Second

// msgUnavailable answers a verification the verifier did not give: unreachable, too slow,
// failing, or answering more than maxVerdict.
const msgUnavailable = "captcha verification unavailable"

// Verifier checks tokens; a nil *Verifier accepts everything (no captcha configured).
type Verifier struct {
	verifyURL string
	secret    string
	hc        *http.Client
}

// New returns a verifier, or nil when verifyURL is empty.
func New(verifyURL, secret string, transport http.RoundTripper) *Verifier {
	if verifyURL == "" {
		return nil
	}
	return &Verifier{verifyURL: verifyURL, secret: secret, hc: &http.Client{Transport: transport, Timeout: timeout}}
}

// Enabled reports whether a verifier is configured.
func (v *Verifier) Enabled() bool { return v != nil }

// Verify returns nil if token is accepted, ErrFailed (400) if it is missing or rejected,
// and a 503 if the verifier gives no verdict within the timeout and maxVerdict bytes. The
// client's IP is not sent: it is optional for every provider, and no raw IP leaves the
// gateway.
func (v *Verifier) Verify(ctx context.Context, token *string) error {
	if v == nil {
		return nil
	}
	if token == nil || *token == "" || len(*token) > maxToken {
		return ErrFailed
	}
	form := url.Values{"secret": {v.secret}, "response": {*token}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.verifyURL, strings.NewReader(form.Encode()))
	if err != nil {
		return ErrFailed
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	body, err := v.post(req)
	if err != nil {
		return errs.Unavailable(msgUnavailable, err)
	}
	var out struct {
		Success bool `json:"success"`
	}
	if err := json.Unmarshal(body, &out); err != nil || !out.Success {
		return ErrFailed
	}
	return nil
}

// post sends req and returns the body of a 200 answer, read within the client's timeout and
// refused beyond maxVerdict bytes.
func (v *Verifier) post(req *http.Request) ([]byte, error) {
	resp, err := v.hc.Do(req)
	if err != nil {
		return nil, err
	}
	return httpclient.ReadBounded(resp, maxVerdict, "captcha verdict")
}
