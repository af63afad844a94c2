package webhooks

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// Stream and Group name the link-events stream and its webhook consumers.
const (
	Stream = link.EventStream
	Group  = "webhooks"
	// streamMaxLen caps the stream, approximately; the consumers trim what they handled.
	streamMaxLen = 100_000
)

// Sink takes the link service's events (links.EventSink): onto the stream, or straight into
// deliveries.
type Sink struct {
	Redis redis.UniversalClient
	Hooks *Service
}

// Deliver makes events durable as deliveries at once, without the stream.
func (s Sink) Deliver(ctx context.Context, events []links.Published) error {
	return s.Hooks.fanOut(ctx, events)
}

// Append adds events in one pipeline and returns once Redis holds them all.
func (s Sink) Append(ctx context.Context, events []links.Published) error {
	pipe := s.Redis.Pipeline()
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode link event: %w", err)
		}
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: Stream, MaxLen: streamMaxLen, Approx: true, Values: []any{"event", string(b)}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("append link events: %w", err)
	}
	return nil
}
