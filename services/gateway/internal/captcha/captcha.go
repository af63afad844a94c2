// Package captcha verifies captcha tokens with a siteverify endpoint (hCaptcha, Turnstile and
// reCAPTCHA all take a form POST of secret and response and answer {"success": bool}).
package captcha

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// ErrFailed is the one answer a caller gets for a missing, rejected or unverifiable token.
var ErrFailed = errs.Invalid("captcha verification failed")

// maxToken bounds what we forward; real tokens are a few kilobytes at most.
const maxToken = 8192

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
	return &Verifier{verifyURL: verifyURL, secret: secret, hc: &http.Client{Transport: transport, Timeout: 5 * time.Second}}
}

// Verify returns nil if token is accepted. The client's IP is not sent: it is optional for
// every provider, and no raw IP leaves the gateway.
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
	resp, err := v.hc.Do(req)
	if err != nil {
		return errs.Unavailable("captcha verification unavailable", err)
	}
	defer resp.Body.Close()
	var out struct {
		Success bool `json:"success"`
	}
	if resp.StatusCode != http.StatusOK {
		return errs.Unavailable("captcha verification unavailable", nil)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64*1024)).Decode(&out); err != nil || !out.Success {
		return ErrFailed
	}
	return nil
}
