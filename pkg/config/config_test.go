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
	t.Setenv("LINKMESH_INTERNAL_SECRET", "short")
	cfg, err := Load[Service]()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenAddr != "127.0.0.1:9999" || cfg.LogLevel != "info" {
		t.Fatalf("unexpected config %+v", cfg)
	}
	if err := cfg.Validate(); err == nil {
		t.Fatal("a short internal secret must be refused")
	}
}

func TestDefaultsFillOnlyWhatIsUnset(t *testing.T) {
	s, m := Service{}, Mongo{}
	Defaults(&s, &m, "127.0.0.1:1", "db_a")
	if s.ListenAddr != "127.0.0.1:1" || m.Database != "db_a" {
		t.Fatalf("unset values not filled: %+v %+v", s, m)
	}
	s, m = Service{ListenAddr: ":9"}, Mongo{Database: "mine"}
	Defaults(&s, &m, "127.0.0.1:1", "db_a")
	Defaults(&s, nil, "127.0.0.1:2", "ignored")
	if s.ListenAddr != ":9" || m.Database != "mine" {
		t.Fatalf("set values overwritten: %+v %+v", s, m)
	}
}
