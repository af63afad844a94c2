package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestSecretNeverPrinted(t *testing.T) {
	s := Secret("hunter2-hunter2")
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("cfg", "secret", s, "cfg", struct{ S Secret }{s})
	out := buf.String() + fmt.Sprintf("%v %s %+v", s, s, struct{ S Secret }{s})
	if strings.Contains(out, "hunter2") {
		t.Fatalf("secret leaked: %s", out)
	}
	if s.Reveal() != "hunter2-hunter2" {
		t.Fatalf("Reveal = %q", s.Reveal())
	}
}

func TestLoadReadsEnvironment(t *testing.T) {
	t.Setenv("LINKMESH_LISTEN_ADDR", "127.0.0.1:9999")
	t.Setenv("LINKMESH_INTERNAL_KEY", "")
	cfg, err := Load[Service]()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenAddr != "127.0.0.1:9999" || cfg.LogLevel != "info" {
		t.Fatalf("unexpected config %+v", cfg)
	}
	if err := cfg.Validate(); err == nil {
		t.Fatal("a missing internal key must be refused")
	}
}

func TestApplyDefaultsFillOnlyWhatIsUnset(t *testing.T) {
	s, m, p := Service{}, Mongo{}, Peers{LinkURL: "http://link:80"}
	ApplyDefaults(Quota, &s, &m, &p)
	if s.ListenAddr != "127.0.0.1:8085" || m.Database != "linkmesh_quota" || p.AuthURL != "http://127.0.0.1:8081" ||
		p.QuotaURL != "http://127.0.0.1:8085" || p.LinkURL != "http://link:80" {
		t.Fatalf("unset values not filled, or set ones overwritten: %+v %+v %+v", s, m, p)
	}
	s, m = Service{ListenAddr: ":9"}, Mongo{Database: "mine"}
	ApplyDefaults(Auth, &s, &m, nil)
	if s.ListenAddr != ":9" || m.Database != "mine" {
		t.Fatalf("set values overwritten: %+v %+v", s, m)
	}
}

// Every service has a default address, all different; an unknown name has none.
func TestDefaultAddrTable(t *testing.T) {
	seen := map[string]bool{}
	for _, svc := range []string{Gateway, Auth, Link, Analytics, Moderation, Quota} {
		addr := DefaultAddr(svc)
		if addr == "" || seen[addr] {
			t.Fatalf("%s: default address %q missing or shared", svc, addr)
		}
		seen[addr] = true
	}
	if DefaultAddr("nope") != "" {
		t.Fatal("an unknown service has a default address")
	}
}

func TestParseLogLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		if got, err := ParseLogLevel(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "verbose", "inf", "info ", "-4", "info+2", "DEBUG-8"} {
		if _, err := ParseLogLevel(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
