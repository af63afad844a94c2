package stack

import (
	"sort"
	"strings"

	"github.com/linkmesh/linkmesh/pkg/identity"
)

// Environment variables the services read.
const (
	EnvListenAddr     = "LINKMESH_LISTEN_ADDR"
	EnvMongoURI       = "LINKMESH_MONGODB_URI"
	EnvMongoDatabase  = "LINKMESH_MONGODB_DATABASE"
	EnvRedisURL       = "LINKMESH_REDIS_URL"
	EnvBaseURL        = "LINKMESH_BASE_URL"
	EnvSMTPURL        = "LINKMESH_SMTP_URL"
	EnvInternalKey    = "LINKMESH_INTERNAL_KEY"
	EnvInternalCerts  = "LINKMESH_INTERNAL_CERTS"
	EnvIdentitySecret = "LINKMESH_IDENTITY_SECRET"
	EnvWebhookKey     = "LINKMESH_WEBHOOK_KEY"
	EnvClickSpool     = "LINKMESH_CLICK_SPOOL"
)

// ServiceNames returns the six services in start order: dependencies first,
// the gateway (which fronts all others) last.
func ServiceNames() []string {
	return []string{"quota", "link", "auth", "analytics", "moderation", "gateway"}
}

// ServiceURLEnv returns the variable holding a service's base URL, e.g.
// LINKMESH_LINK_URL for "link".
func ServiceURLEnv(service string) string {
	return "LINKMESH_" + strings.ToUpper(service) + "_URL"
}

// serviceEnvConfig is everything serviceEnv needs, passed explicitly so the
// environment is a pure function of it (and unit-testable).
type serviceEnvConfig struct {
	Base           []string          // the parent environment, KEY=VALUE
	Service        string            // the service being started
	Addrs          map[string]string // every service's host:port
	MongoURI       string
	RedisURL       string
	DatabasePrefix string
	Internal       identity.KeySet // every service's internal key and the certificates
	IdentitySecret string
	Env            map[string]string // overrides for every service
	ServiceEnv     map[string]string // overrides for this service only
}

// serviceEnv builds a service's environment: the parent's, then the stack's
// defaults, then Env, then ServiceEnv, each layer overriding the one before.
// Overridden variables are replaced in place rather than duplicated, so the
// child sees exactly one value per name.
func serviceEnv(c serviceEnvConfig) []string {
	var e envBuilder
	for _, kv := range c.Base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			e.set(k, v)
		}
	}
	e.set(EnvListenAddr, c.Addrs[c.Service])
	e.set(EnvMongoURI, c.MongoURI)
	e.set(EnvMongoDatabase, c.DatabasePrefix+"_"+c.Service)
	e.set(EnvRedisURL, c.RedisURL)
	for _, svc := range ServiceNames() {
		e.set(ServiceURLEnv(svc), "http://"+c.Addrs[svc])
	}
	// The public base URL defaults to the gateway; Env may set a real domain.
	e.set(EnvBaseURL, "http://"+c.Addrs["gateway"])
	e.set(EnvInternalKey, c.Internal.Keys[c.Service])
	e.set(EnvInternalCerts, c.Internal.Certs)
	e.set(EnvIdentitySecret, c.IdentitySecret)
	e.setAll(c.Env)
	e.setAll(c.ServiceEnv)
	return e.list()
}

// envBuilder is an ordered KEY=VALUE set.
type envBuilder struct {
	keys []string
	vals map[string]string
}

// set adds or replaces one variable, keeping its first position.
func (e *envBuilder) set(k, v string) {
	if e.vals == nil {
		e.vals = make(map[string]string)
	}
	if _, ok := e.vals[k]; !ok {
		e.keys = append(e.keys, k)
	}
	e.vals[k] = v
}

// setAll applies m in key order, so the result is deterministic.
func (e *envBuilder) setAll(m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e.set(k, m[k])
	}
}

// list returns the variables as KEY=VALUE in insertion order.
func (e *envBuilder) list() []string {
	out := make([]string, 0, len(e.keys))
	for _, k := range e.keys {
		out = append(out, k+"="+e.vals[k])
	}
	return out
}
