// Package config holds the analytics service's settings, read once from the environment.
package config

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// Config is every setting the analytics service reads.
type Config struct {
	config.Service
	// Datastores: MongoDB holds clicks and rollups; Redis carries the clicks stream.
	config.Datastores
	// ClickRetention is how long raw click and visitor records are kept after their click
	// (each carries its deadline, which a TTL index enforces); the rollups, which answer
	// every query, are kept for good.
	ClickRetention time.Duration `env:"LINKMESH_CLICK_RETENTION" envDefault:"2160h"`
}

// Validate checks the analytics service's own settings.
func (c *Config) Validate() error {
	if c.ClickRetention < 48*time.Hour {
		return fmt.Errorf("LINKMESH_CLICK_RETENTION must be at least 48h, got %s", c.ClickRetention)
	}
	return nil
}

// LogValue lists the analytics service's own settings for the start-up line.
func (c *Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("click_retention", c.ClickRetention.String()))
}
