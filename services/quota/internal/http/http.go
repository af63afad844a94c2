// Package http exposes the quota rules as the internal routes the typed client
// pkg/clients/quota calls.
package http

import (
	"context"
	"math"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/quota/internal/window"
)

// Limiter is what the handlers need from the window rules.
type Limiter interface {
	ReserveLimit(ctx context.Context, scope, key string, limit *int) (window.Decision, error)
	ReserveMany(ctx context.Context, scope, key string, limit *int, count int) (window.Decision, error)
	Usage(ctx context.Context, scope, key string, limit *int) (window.Decision, error)
	Release(ctx context.Context, scope, key, id string) error
}

// Routes registers the internal routes behind the internal-token check; decisions counts
// every reservation's outcome by scope and decision (allowed or denied).
func Routes(app *fiber.App, keys *identity.Keys, limiter Limiter, decisions *prometheus.CounterVec) {
	h := handlers{limiter: limiter, decisions: decisions}
	g := app.Group("/internal/quota", identity.Require(keys))
	g.Post("/reserve", h.reserve)
	g.Post("/release", h.release)
	g.Post("/usage", h.usage)
}

type handlers struct {
	limiter   Limiter
	decisions *prometheus.CounterVec
}

// reserve answers 200 whether or not a unit was taken: "no room" is a normal outcome that the
// caller turns into its own 429.
func (h handlers) reserve(c *fiber.Ctx) error {
	var req quota.ReserveRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	var d window.Decision
	var err error
	if req.Count != 0 {
		d, err = h.limiter.ReserveMany(c.UserContext(), req.Scope, req.Key, req.Limit, req.Count)
	} else {
		d, err = h.limiter.ReserveLimit(c.UserContext(), req.Scope, req.Key, req.Limit)
	}
	if err != nil {
		return err
	}
	// The scope is one the rules know, or ReserveLimit failed: the label stays bounded.
	decision := "denied"
	if d.Allowed {
		decision = "allowed"
	}
	h.decisions.WithLabelValues(req.Scope, decision).Inc()
	return c.JSON(reservation(d), fiber.MIMEApplicationJSONCharsetUTF8)
}

// usage reads a counter without taking a unit (a POST only to carry the same body).
func (h handlers) usage(c *fiber.Ctx) error {
	var req quota.ReserveRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	d, err := h.limiter.Usage(c.UserContext(), req.Scope, req.Key, req.Limit)
	if err != nil {
		return err
	}
	return c.JSON(reservation(d), fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) release(c *fiber.Ctx) error {
	var req quota.ReleaseRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	if err := h.limiter.Release(c.UserContext(), req.Scope, req.Key, req.ID); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "released"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func reservation(d window.Decision) quota.Reservation {
	return quota.Reservation{
		Allowed:           d.Allowed,
		ID:                d.ID,
		IDs:               d.IDs,
		Limit:             d.Limit,
		Used:              d.Used,
		Remaining:         d.Remaining(),
		RetryAfterSeconds: int(math.Ceil(d.RetryAfter.Seconds())),
		WindowSeconds:     int(d.Window.Seconds()),
		ResetsAt:          d.ResetsAt,
	}
}
