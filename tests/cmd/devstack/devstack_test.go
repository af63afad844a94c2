package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

func TestLoadSecretsPersists(t *testing.T) {
	t.Setenv(stack.EnvIdentitySecret, "")
	t.Setenv(stack.EnvWebhookKey, "")
	dir := t.TempDir()
	first, err := loadSecrets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first[stack.EnvIdentitySecret]) != 64 || len(first[stack.EnvWebhookKey]) != 64 || len(first) != 2 ||
		first[stack.EnvIdentitySecret] == first[stack.EnvWebhookKey] {
		t.Fatalf("generated secrets: %v", first)
	}
	fi, err := os.Stat(filepath.Join(dir, "secrets.env"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("secrets.env mode = %v, want 0600", fi.Mode().Perm())
	}
	second, err := loadSecrets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if second[stack.EnvIdentitySecret] != first[stack.EnvIdentitySecret] || second[stack.EnvWebhookKey] != first[stack.EnvWebhookKey] {
		t.Errorf("secrets changed across runs: %v then %v", first, second)
	}

	t.Setenv(stack.EnvIdentitySecret, "from-env")
	third, err := loadSecrets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if third[stack.EnvIdentitySecret] != "from-env" {
		t.Errorf("the environment should win: %v", third)
	}
}

func TestChildExit(t *testing.T) {
	cases := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"kill -TERM $$", 143},
	}
	for _, c := range cases {
		err := childExit(exec.Command("sh", "-c", c.script).Run())
		got := 0
		var exit *exitCodeError
		if errors.As(err, &exit) {
			got = exit.code
		} else if err != nil {
			t.Fatalf("%q: unexpected error %v", c.script, err)
		}
		if got != c.want {
			t.Errorf("%q: exit code %d, want %d", c.script, got, c.want)
		}
	}
}
