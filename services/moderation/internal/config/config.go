// Package config is the moderation service's typed configuration, read once from LINKMESH_*
// variables at start-up.
package config

import (
	"log/slog"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// Config is everything the moderation service reads: the shared settings, its own
// datastores (permanent_requests, audit_log) and the link service it acts through.
type Config struct {
	config.Service
	// Its own database only: moderation keeps nothing in Redis.
	config.Mongo
	config.Peers
}

// Validate has nothing beyond the shared settings to check.
func (*Config) Validate() error { return nil }

// LogValue lists nothing beyond the shared settings.
func (*Config) LogValue() slog.Value { return slog.GroupValue() }
