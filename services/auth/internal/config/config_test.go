package config

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// internal are the internal key settings, read as text here; their keys are checked at boot.
var internal = map[string]string{"LINKMESH_INTERNAL_KEY": "a key", "LINKMESH_INTERNAL_CERTS": "certificates"}

// setInternal sets the internal key settings.
func setInternal(t *testing.T) {
	for k, v := range internal {
		t.Setenv(k, v)
	}
}

// clearEnv sets every variable the service reads to empty, so the host's values don't leak in.
func clearEnv(t *testing.T) {
	for _, k := range []string{"LINKMESH_LISTEN_ADDR", "LINKMESH_MONGODB_DATABASE", "LINKMESH_SESSION_TTL",
		"LINKMESH_LOGIN_RECORD_RETENTION", "LINKMESH_OIDC_ISSUER", "LINKMESH_OIDC_CLIENT_ID", "LINKMESH_OIDC_JWKS_URL", "LINKMESH_OIDC_AUTHORIZATION_URL", "LINKMESH_QUOTA_URL",
		"LINKMESH_BOOTSTRAP_ADMIN_EMAIL", "LINKMESH_BOOTSTRAP_ADMIN_PASSWORD"} {
		t.Setenv(k, "")
	}
	setInternal(t)
}

// load reads the configuration the way the service starts.
func load() (*Config, error) {
	cfg := &Config{}
	return cfg, service.Load("auth", cfg)
}

func TestLoadDefaults(t *testing.T) {
	clearEnv(t)
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenAddr != "127.0.0.1:8081" || cfg.Database != "linkmesh_auth" || cfg.SessionTTL != 168*time.Hour ||
		cfg.LoginRecordRetention != 2160*time.Hour ||
		cfg.QuotaURL != "http://127.0.0.1:8085" || cfg.OIDCIssuer != "" || cfg.BootstrapAdminEmail != "" {
		t.Fatalf("defaults = %+v", cfg)
	}
	if DefaultLoginRecordRetention != cfg.LoginRecordRetention {
		t.Fatalf("DefaultLoginRecordRetention = %s; the setting's default is %s", DefaultLoginRecordRetention, cfg.LoginRecordRetention)
	}
}

func TestLoadReadsSettings(t *testing.T) {
	clearEnv(t)
	for k, v := range map[string]string{
		"LINKMESH_SESSION_TTL": "2h", "LINKMESH_OIDC_ISSUER": "https://accounts.google.com",
		"LINKMESH_OIDC_CLIENT_ID": "cid", "LINKMESH_OIDC_JWKS_URL": "https://www.googleapis.com/oauth2/v3/certs",
		"LINKMESH_BOOTSTRAP_ADMIN_EMAIL": " Admin@Example.com ", "LINKMESH_BOOTSTRAP_ADMIN_PASSWORD": "correct-horse",
		"LINKMESH_QUOTA_URL": "http://127.0.0.1:9085", "LINKMESH_LOGIN_RECORD_RETENTION": "24h",
		"LINKMESH_OIDC_AUTHORIZATION_URL": "https://accounts.google.com/o/oauth2/v2/auth?hd=example.com",
	} {
		t.Setenv(k, v)
	}
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SessionTTL != 2*time.Hour || cfg.OIDCIssuer != "https://accounts.google.com" || cfg.OIDCClientID != "cid" ||
		cfg.OIDCJWKSURL == "" || cfg.BootstrapAdminPassword.Reveal() != "correct-horse" || cfg.QuotaURL != "http://127.0.0.1:9085" ||
		cfg.LoginRecordRetention != 24*time.Hour || cfg.OIDCAuthorizationURL != "https://accounts.google.com/o/oauth2/v2/auth?hd=example.com" {
		t.Fatalf("config = %+v", cfg)
	}
}

func TestLoadRejects(t *testing.T) {
	cases := map[string]map[string]string{
		"no internal key":              {"LINKMESH_INTERNAL_KEY": ""},
		"no certificates":              {"LINKMESH_INTERNAL_CERTS": ""},
		"tiny session ttl":             {"LINKMESH_SESSION_TTL": "30s"},
		"huge session ttl":             {"LINKMESH_SESSION_TTL": "9000h"},
		"bad session ttl":              {"LINKMESH_SESSION_TTL": "a week"},
		"retention under a day":        {"LINKMESH_LOGIN_RECORD_RETENTION": "23h59m"},
		"retention zero":               {"LINKMESH_LOGIN_RECORD_RETENTION": "0s"},
		"retention negative":           {"LINKMESH_LOGIN_RECORD_RETENTION": "-2160h"},
		"bad retention":                {"LINKMESH_LOGIN_RECORD_RETENTION": "90 days"},
		"issuer without client":        {"LINKMESH_OIDC_ISSUER": "https://accounts.google.com"},
		"client without issuer":        {"LINKMESH_OIDC_CLIENT_ID": "cid"},
		"relative issuer":              {"LINKMESH_OIDC_ISSUER": "accounts.google.com", "LINKMESH_OIDC_CLIENT_ID": "cid"},
		"jwks without issuer":          {"LINKMESH_OIDC_JWKS_URL": "https://www.googleapis.com/oauth2/v3/certs"},
		"bad jwks url":                 {"LINKMESH_OIDC_ISSUER": "https://a.example", "LINKMESH_OIDC_CLIENT_ID": "c", "LINKMESH_OIDC_JWKS_URL": "ftp://x"},
		"bad quota url":                {"LINKMESH_QUOTA_URL": "quota:8085"},
		"authorization without issuer": {"LINKMESH_OIDC_AUTHORIZATION_URL": "https://a.example/authorize"},
		"authorization over http": {"LINKMESH_OIDC_ISSUER": "https://a.example", "LINKMESH_OIDC_CLIENT_ID": "c",
			"LINKMESH_OIDC_AUTHORIZATION_URL": "http://a.example/authorize"},
		"relative authorization": {"LINKMESH_OIDC_ISSUER": "https://a.example", "LINKMESH_OIDC_CLIENT_ID": "c",
			"LINKMESH_OIDC_AUTHORIZATION_URL": "/authorize"},
		"admin email without pass": {"LINKMESH_BOOTSTRAP_ADMIN_EMAIL": "a@example.com"},
		"admin pass without email": {"LINKMESH_BOOTSTRAP_ADMIN_PASSWORD": "correct-horse"},
		"admin email invalid":      {"LINKMESH_BOOTSTRAP_ADMIN_EMAIL": "Admin <a@example.com>", "LINKMESH_BOOTSTRAP_ADMIN_PASSWORD": "correct-horse"},
		"admin password too short": {"LINKMESH_BOOTSTRAP_ADMIN_EMAIL": "a@example.com", "LINKMESH_BOOTSTRAP_ADMIN_PASSWORD": "short"},
		"admin password over 128":  {"LINKMESH_BOOTSTRAP_ADMIN_EMAIL": "a@example.com", "LINKMESH_BOOTSTRAP_ADMIN_PASSWORD": strings.Repeat("p", 129)},
	}
	clearEnv(t)
	testenv.RefusesConfig(t, internal, cases, func() error { _, err := load(); return err })
}

func TestLogValueMasksSecrets(t *testing.T) {
	cfg := Config{SessionTTL: time.Hour, LoginRecordRetention: 2160 * time.Hour, BootstrapAdminEmail: "a@example.com", BootstrapAdminPassword: "admin-password-1"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("starting", "config", &cfg)
	out := buf.String()
	for _, leak := range []string{"admin-password-1"} {
		if strings.Contains(out, leak) {
			t.Fatalf("log leaks %q: %s", leak, out)
		}
	}
	if !strings.Contains(out, `"session_ttl":"1h0m0s"`) || !strings.Contains(out, `"login_record_retention":"2160h0m0s"`) || !strings.Contains(out, `"bootstrap_admin":true`) {
		t.Fatalf("log lacks the settings: %s", out)
	}
}
