// Package config holds the analytics service's settings, read once from the environment.
package config

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// MinClickRetention is the shortest LINKMESH_CLICK_RETENTION: two days of raw clicks.
const MinClickRetention = 48 * time.Hour

// Config is every setting the analytics service reads.
type Config struct {
	config.Service
	// Datastores: MongoDB holds clicks and rollups; Redis carries the clicks stream.
	config.Datastores
	// ClickRetention is how long raw click and visitor records are kept after their click
	// (each carries its deadline, which a TTL index enforces); the rollups, which answer
	// every query, are kept for good.
	ClickRetention time.Duration `env:"LINKMESH_CLICK_RETENTION" envDefault:"2160h"`
	// ClickBudget is how many clicks one client's visits to one link count per
	// ClickBudgetWindow; the visits beyond it are redirected but not counted. 0 counts all.
	ClickBudget       int           `env:"LINKMESH_CLICK_BUDGET" envDefault:"30"`
	ClickBudgetWindow time.Duration `env:"LINKMESH_CLICK_BUDGET_WINDOW" envDefault:"10m"`
}

// Validate checks the analytics service's own settings.
func (c *Config) Validate() error {
	if c.ClickRetention < MinClickRetention {
		return fmt.Errorf("LINKMESH_CLICK_RETENTION must be at least %s, got %s", MinClickRetention, c.ClickRetention)
	}
	if c.ClickBudget < 0 {
		return fmt.Errorf("LINKMESH_CLICK_BUDGET must be 0 (off) or more, got %d", c.ClickBudget)
	}
	if c.ClickBudgetWindow < time.Minute || c.ClickBudgetWindow > 24*time.Hour {
		return fmt.Errorf("LINKMESH_CLICK_BUDGET_WINDOW must be between 1m and 24h, got %s", c.ClickBudgetWindow)
	}
	return nil
}

// LogValue lists the analytics service's own settings for the start-up line.
func (c *Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("click_retention", c.ClickRetention.String()),
		slog.Int("click_budget", c.ClickBudget), slog.String("click_budget_window", c.ClickBudgetWindow.String()))
}
