package window

import (
	"time"
	"unicode/utf8"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

// MaxKeyLength bounds an identity key, in characters; keys are HMACs or user ids.
const MaxKeyLength = 128

// Policy is how one scope counts: at most Limit units in any sliding Window.
type Policy struct {
	Limit  int
	Window time.Duration
	// Anonymous marks counters of callers without an account (is_anonymous in quota_usage).
	Anonymous bool
	// PerCaller scopes take their limit from each reservation (the account's own
	// quota_limit), so a changed limit applies to the very next one; Limit is unused.
	PerCaller bool
	// Ephemeral scopes are counted in Redis only, never in the MongoDB ledger: a request
	// rate over a minute, which a Redis loss may forget (the window starts afresh), where a
	// durable write per request would cost more than the request itself.
	Ephemeral bool
}

// MaxCallerLimit bounds a per-caller limit.
const MaxCallerLimit = 1_000_000

// Sizes are the configured limits and windows the scope table reads.
type Sizes struct {
	AnonLimit  int
	AnonWindow time.Duration
	// LoginFailures is how many failed logins one pair of e-mail and identity key may have
	// per LoginWindow (password logins), and one identity key alone (ID-token logins).
	LoginFailures int
	// LoginFailuresPerEmail is the ceiling of failed password logins of one e-mail over all
	// clients per LoginWindow.
	LoginFailuresPerEmail int
	// LoginFailuresPerClient is how many failed password logins one identity key may have
	// over all e-mails per LoginWindow.
	LoginFailuresPerClient int
	LoginWindow            time.Duration
	// Registrations is how many accounts one identity key may register per RegisterWindow.
	Registrations  int
	RegisterWindow time.Duration
	// UserWindow is the sliding window of registered users' creations.
	UserWindow time.Duration
	// TokenRate is how many requests one API token may make per quota.TokenWindow.
	TokenRate int
}

// Scopes is the scope table: every scope the service counts, one row each.
func Scopes(s Sizes) map[string]Policy {
	return map[string]Policy{
		quota.ScopeAnonymousCreate: {Limit: s.AnonLimit, Window: s.AnonWindow, Anonymous: true},
		// Login counters belong to callers who are not (yet) logged in. The auth service
		// releases the unit of a successful login, so only failures stay counted.
		quota.ScopeLoginEmailClient: {Limit: s.LoginFailures, Window: s.LoginWindow, Anonymous: true},
		quota.ScopeLoginEmail:       {Limit: s.LoginFailuresPerEmail, Window: s.LoginWindow, Anonymous: true},
		quota.ScopeLoginIP:          {Limit: s.LoginFailures, Window: s.LoginWindow, Anonymous: true},
		quota.ScopeLoginClient:      {Limit: s.LoginFailuresPerClient, Window: s.LoginWindow, Anonymous: true},
		// Registrations, keyed by the registering client's identity key.
		quota.ScopeRegister: {Limit: s.Registrations, Window: s.RegisterWindow, Anonymous: true},
		// Registered users' creations, keyed by user id, limited by each account's quota_limit.
		quota.ScopeUserCreate: {Window: s.UserWindow, PerCaller: true},
		// Abuse reports, keyed by the reporter's identity key whether signed in or not.
		quota.ScopeReport: {Limit: quota.ReportLimit, Window: quota.ReportWindow, Anonymous: true},
		// Password-reset requests, per client and per e-mail.
		quota.ScopeResetClient: {Limit: quota.ResetLimitClient, Window: quota.ResetWindow, Anonymous: true},
		quota.ScopeResetEmail:  {Limit: quota.ResetLimitEmail, Window: quota.ResetWindow, Anonymous: true},
		// Verification mails asked for again, per account.
		quota.ScopeVerifyResend: {Limit: quota.ResendLimit, Window: quota.ResendWindow},
		// Data exports, per account.
		quota.ScopeExport: {Limit: quota.ExportLimit, Window: quota.ExportWindow},
		// Requests of an API token, keyed by the token's id.
		quota.ScopeAPIToken: {Limit: s.TokenRate, Window: quota.TokenWindow, Ephemeral: true},
	}
}

// policyWithLimit is policyFor with the reservation's limit applied: required (0 to
// MaxCallerLimit) for per-caller scopes, refused for the others, as 400s.
func (l *Limiter) policyWithLimit(scope, key string, limit *int) (Policy, error) {
	p, err := l.policyFor(scope, key)
	switch {
	case err != nil:
		return Policy{}, err
	case !p.PerCaller && limit != nil:
		return Policy{}, errs.Invalid("limit is not accepted for scope %q", scope)
	case p.PerCaller && limit == nil:
		return Policy{}, errs.Invalid("limit is required for scope %q", scope)
	case p.PerCaller && (*limit < 0 || *limit > MaxCallerLimit):
		return Policy{}, errs.Invalid("limit must be between 0 and %d", MaxCallerLimit)
	case p.PerCaller:
		p.Limit = *limit
	}
	return p, nil
}

// policyFor returns the policy of scope after checking scope and key, as 400s.
func (l *Limiter) policyFor(scope, key string) (Policy, error) {
	if scope == "" {
		return Policy{}, errs.Invalid("scope is required")
	}
	p, ok := l.scopes[scope]
	if !ok {
		return Policy{}, errs.Invalid("scope %q is unknown", scope)
	}
	if key == "" {
		return Policy{}, errs.Invalid("key is required")
	}
	if utf8.RuneCountInString(key) > MaxKeyLength {
		return Policy{}, errs.Invalid("key must be at most %d characters", MaxKeyLength)
	}
	return p, nil
}
