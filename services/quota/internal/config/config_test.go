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

// load reads the configuration the way the service starts.
func load() (*Config, error) {
	cfg := &Config{}
	return cfg, service.Load("quota", cfg)
}

func TestLoadDefaults(t *testing.T) {
	setInternal(t)
	t.Setenv("LINKMESH_LISTEN_ADDR", "")
	t.Setenv("LINKMESH_MONGODB_DATABASE", "")
	t.Setenv("LINKMESH_ANON_QUOTA", "")
	t.Setenv("LINKMESH_ANON_WINDOW", "")
	t.Setenv("LINKMESH_LOGIN_MAX_FAILURES", "")
	t.Setenv("LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL", "")
	t.Setenv("LINKMESH_LOGIN_WINDOW", "")
	t.Setenv("LINKMESH_LOGIN_MAX_FAILURES_PER_CLIENT", "")
	t.Setenv("LINKMESH_REGISTER_LIMIT", "")
	t.Setenv("LINKMESH_REGISTER_WINDOW", "")
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenAddr != "127.0.0.1:8085" || cfg.Database != "linkmesh_quota" ||
		cfg.AnonQuota != 10 || cfg.AnonWindow != 24*time.Hour ||
		cfg.LoginMaxFailures != 10 || cfg.LoginMaxFailuresPerEmail != 100 || cfg.LoginWindow != 15*time.Minute ||
		cfg.LoginMaxFailuresPerClient != 30 || cfg.RegisterLimit != 5 || cfg.RegisterWindow != time.Hour {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestLoadReadsSettings(t *testing.T) {
	setInternal(t)
	t.Setenv("LINKMESH_LISTEN_ADDR", "127.0.0.1:9000")
	t.Setenv("LINKMESH_MONGODB_DATABASE", "q")
	t.Setenv("LINKMESH_ANON_QUOTA", "3")
	t.Setenv("LINKMESH_ANON_WINDOW", "90m")
	t.Setenv("LINKMESH_LOGIN_MAX_FAILURES", "5")
	t.Setenv("LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL", "5")
	t.Setenv("LINKMESH_LOGIN_WINDOW", "1h")
	t.Setenv("LINKMESH_LOGIN_MAX_FAILURES_PER_CLIENT", "50")
	t.Setenv("LINKMESH_REGISTER_LIMIT", "2")
	t.Setenv("LINKMESH_REGISTER_WINDOW", "3h")
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenAddr != "127.0.0.1:9000" || cfg.Database != "q" || cfg.AnonQuota != 3 || cfg.AnonWindow != 90*time.Minute ||
		cfg.LoginMaxFailures != 5 || cfg.LoginMaxFailuresPerEmail != 5 || cfg.LoginWindow != time.Hour ||
		cfg.LoginMaxFailuresPerClient != 50 || cfg.RegisterLimit != 2 || cfg.RegisterWindow != 3*time.Hour {
		t.Fatalf("config = %+v", cfg)
	}
}

func TestLoadRejects(t *testing.T) {
	cases := map[string]map[string]string{
		"no internal key":           {"LINKMESH_INTERNAL_KEY": ""},
		"no certificates":           {"LINKMESH_INTERNAL_CERTS": ""},
		"zero quota":                {"LINKMESH_ANON_QUOTA": "0"},
		"tiny window":               {"LINKMESH_ANON_WINDOW": "30s"},
		"bad window":                {"LINKMESH_ANON_WINDOW": "a day"},
		"non-int quota":             {"LINKMESH_ANON_QUOTA": "ten"},
		"zero login failures":       {"LINKMESH_LOGIN_MAX_FAILURES": "0"},
		"negative login failures":   {"LINKMESH_LOGIN_MAX_FAILURES": "-1"},
		"non-int login failures":    {"LINKMESH_LOGIN_MAX_FAILURES": "many"},
		"zero per-email ceiling":    {"LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL": "0"},
		"ceiling below per-client":  {"LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL": "9"},
		"non-int per-email ceiling": {"LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL": "lots"},
		"tiny login window":         {"LINKMESH_LOGIN_WINDOW": "59s"},
		"bad login window":          {"LINKMESH_LOGIN_WINDOW": "15"},
		"per-client below per-pair": {"LINKMESH_LOGIN_MAX_FAILURES_PER_CLIENT": "9"},
		"non-int per-client":        {"LINKMESH_LOGIN_MAX_FAILURES_PER_CLIENT": "x"},
		"zero registrations":        {"LINKMESH_REGISTER_LIMIT": "0"},
		"tiny register window":      {"LINKMESH_REGISTER_WINDOW": "30s"},
	}
	base := map[string]string{"LINKMESH_INTERNAL_KEY": "a key", "LINKMESH_INTERNAL_CERTS": "certificates", "LINKMESH_ANON_QUOTA": "10", "LINKMESH_ANON_WINDOW": "24h",
		"LINKMESH_LOGIN_MAX_FAILURES": "10", "LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL": "100", "LINKMESH_LOGIN_WINDOW": "15m",
		"LINKMESH_LOGIN_MAX_FAILURES_PER_CLIENT": "30", "LINKMESH_REGISTER_LIMIT": "5", "LINKMESH_REGISTER_WINDOW": "1h"}
	testenv.RefusesConfig(t, base, cases, func() error { _, err := load(); return err })
}

// The start-up line lists the service's own settings (pkg/service logs the shared ones).
func TestLogValueListsSettings(t *testing.T) {
	cfg := Config{AnonQuota: 10, AnonWindow: time.Hour, LoginMaxFailures: 7, LoginMaxFailuresPerEmail: 70, LoginWindow: 20 * time.Minute}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("starting", "config", &cfg)
	out := buf.String()
	if !strings.Contains(out, `"anon_quota":10`) || !strings.Contains(out, `"anon_window":"1h0m0s"`) ||
		!strings.Contains(out, `"login_max_failures":7`) || !strings.Contains(out, `"login_max_failures_per_email":70`) ||
		!strings.Contains(out, `"login_window":"20m0s"`) {
		t.Fatalf("log lacks the settings: %s", out)
	}
}
