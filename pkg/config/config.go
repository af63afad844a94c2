// Package config loads typed settings from LINKMESH_* environment variables once at start-up.
package config

import (
	"fmt"
	"log/slog"

	"github.com/caarlos0/env/v11"
)

// Load parses the environment into a new T using `env` struct tags.
func Load[T any]() (T, error) {
	cfg, err := env.ParseAs[T]()
	if err != nil {
		return cfg, fmt.Errorf("load config: %w", err)
	}
	return cfg, nil
}

// Secret is a setting that must never appear in logs.
type Secret string

// String masks the value so fmt and %v never leak it.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "****"
}

// LogValue masks the value for slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText masks the value for encoders that use it.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reveal returns the actual value; call it only where the secret is used.
func (s Secret) Reveal() string { return string(s) }
