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
}

// Sizes are the configured limits and windows the scope table reads.
type Sizes struct {
	AnonLimit  int
	AnonWindow time.Duration
	// LoginFailures is how many failed logins one e-mail (and, separately, one identity
	// key) may have per LoginWindow.
	LoginFailures int
	LoginWindow   time.Duration
}

// Scopes is the scope table: every scope the service counts, one row each.
func Scopes(s Sizes) map[string]Policy {
	return map[string]Policy{
		quota.ScopeAnonymousCreate: {Limit: s.AnonLimit, Window: s.AnonWindow, Anonymous: true},
		// Login counters belong to callers who are not (yet) logged in. The auth service
		// releases the unit of a successful login, so only failures stay counted.
		quota.ScopeLoginEmail: {Limit: s.LoginFailures, Window: s.LoginWindow, Anonymous: true},
		quota.ScopeLoginIP:    {Limit: s.LoginFailures, Window: s.LoginWindow, Anonymous: true},
	}
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
