package pipeline

import (
	"context"
	"log/slog"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// Group is the consumer group of the analytics service on the clicks stream.
const Group = "analytics"

// Handler stores a batch of click entries; the worker acknowledges them only once it
// returns nil, so a click is acknowledged only once it is stored. An entry that is no
// click (a foreign or damaged entry) is logged and skipped: retrying cannot fix it.
func Handler(st *store.Store, log *slog.Logger, now func() time.Time) stream.Handler {
	return func(ctx context.Context, msgs []stream.Message) error {
		clicks := make([]analytics.Click, 0, len(msgs))
		for _, m := range msgs {
			c, err := analytics.ClickFromValues(m.Values)
			if err != nil {
				log.WarnContext(ctx, "skipping an entry that is no click", "id", m.ID, "err", err)
				continue
			}
			clicks = append(clicks, c)
		}
		return st.Save(ctx, clicks, now())
	}
}
