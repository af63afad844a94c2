package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/identity"
)

func TestServiceEnv(t *testing.T) {
	addrs := map[string]string{
		"gateway": "127.0.0.1:8080", "auth": "127.0.0.1:8081", "link": "127.0.0.1:8082",
		"analytics": "127.0.0.1:8083", "moderation": "127.0.0.1:8084", "quota": "127.0.0.1:8085",
	}
	env := serviceEnv(serviceEnvConfig{
		Base:           []string{"PATH=/bin", "LINKMESH_LISTEN_ADDR=stale", "HOME=/root"},
		Service:        "link",
		Addrs:          addrs,
		MongoURI:       "mongodb://127.0.0.1:1/",
		RedisURL:       "redis://127.0.0.1:2/0",
		DatabasePrefix: "lm",
		Internal:       identity.KeySet{Keys: map[string]string{"link": "link-key", "quota": "quota-key"}, Certs: "certs"},
		IdentitySecret: "id",
		Env:            map[string]string{"LINKMESH_BASE_URL": "https://lnk.example", "LINKMESH_LOG_LEVEL": "debug"},
		ServiceEnv:     map[string]string{"LINKMESH_LOG_LEVEL": "info"},
	})

	want := map[string]string{
		"PATH":                      "/bin",
		"HOME":                      "/root",
		"LINKMESH_LISTEN_ADDR":      "127.0.0.1:8082",
		"LINKMESH_MONGODB_URI":      "mongodb://127.0.0.1:1/",
		"LINKMESH_MONGODB_DATABASE": "lm_link",
		"LINKMESH_REDIS_URL":        "redis://127.0.0.1:2/0",
		"LINKMESH_AUTH_URL":         "http://127.0.0.1:8081",
		"LINKMESH_LINK_URL":         "http://127.0.0.1:8082",
		"LINKMESH_ANALYTICS_URL":    "http://127.0.0.1:8083",
		"LINKMESH_MODERATION_URL":   "http://127.0.0.1:8084",
		"LINKMESH_QUOTA_URL":        "http://127.0.0.1:8085",
		"LINKMESH_GATEWAY_URL":      "http://127.0.0.1:8080",
		"LINKMESH_BASE_URL":         "https://lnk.example", // Env overrides the default
		"LINKMESH_INTERNAL_KEY":     "link-key",            // the service's own
		"LINKMESH_INTERNAL_CERTS":   "certs",
		"LINKMESH_IDENTITY_SECRET":  "id",
		"LINKMESH_LOG_LEVEL":        "info", // ServiceEnv overrides Env
	}
	got := make(map[string]string)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s appears twice", k)
		}
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d variables, want %d: %v", len(got), len(want), env)
	}
	// Parent variables keep their position; only values change.
	if env[0] != "PATH=/bin" || env[1] != "LINKMESH_LISTEN_ADDR=127.0.0.1:8082" {
		t.Errorf("parent order not kept: %v", env[:3])
	}
}

func TestServiceEnvDefaultBaseURL(t *testing.T) {
	env := serviceEnv(serviceEnvConfig{
		Service: "gateway",
		Addrs:   map[string]string{"gateway": "127.0.0.1:9999"},
	})
	if !slices.Contains(env, "LINKMESH_BASE_URL=http://127.0.0.1:9999") {
		t.Errorf("default base URL missing: %v", env)
	}
	if !slices.Contains(env, "LINKMESH_LISTEN_ADDR=127.0.0.1:9999") {
		t.Errorf("listen addr missing: %v", env)
	}
}

func TestSecretsFor(t *testing.T) {
	k1, s1, err := secretsFor(nil)
	if err != nil {
		t.Fatal(err)
	}
	k2, s2, _ := secretsFor(nil)
	if len(s1) != 64 || s1 == s2 || k1.Keys["link"] == k2.Keys["link"] || k1.Certs == k2.Certs {
		t.Errorf("generated secrets not fresh: %q %q", s1, s2)
	}
	// Each service's keys are usable by it and verify the others' tokens.
	for _, svc := range ServiceNames() {
		if _, err := identity.NewKeys(svc, k1.Keys[svc], k1.Certs); err != nil {
			t.Errorf("%s: %v", svc, err)
		}
	}
	if _, s, _ := secretsFor(map[string]string{EnvIdentitySecret: "y"}); s != "y" {
		t.Errorf("Env identity secret not used: %q", s)
	}
}
