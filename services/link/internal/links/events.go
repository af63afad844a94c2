package links

import (
	"context"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
)

// Published is an event as it goes onto the event stream: the event, the owner whose
// webhooks hear of it, and the link as it stands when the event leaves the outbox.
type Published struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	At      time.Time `json:"at"`
	OwnerID string    `json:"owner_id"`
	Link    link.Link `json:"link"`
}

// EventSink appends events to the event stream; *webhooks.Stream satisfies it. Append
// returns once the events are stored there.
type EventSink interface {
	Append(ctx context.Context, events []Published) error
}

// outboxBatch is how many links one pass of the relay reads.
const outboxBatch = 100

// kickRelay wakes the relay of this replica: a link was written with an event.
func (s *Service) kickRelay() {
	select {
	case s.kick <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// RunRelay moves events from the links' outboxes onto the event stream until ctx ends: at
// once when this replica wrote one, and every second for what other replicas, or a replica
// that died between a change and its relay, left behind.
func (s *Service) RunRelay(ctx context.Context) {
	if s.events == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
		if _, err := s.RelayOutbox(ctx, time.Now()); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "relay link events", "err", err)
		}
	}
}

// RelayOutbox sends the events written before before to the stream, a batch of links at a
// time (one append, one write clearing their outboxes), and returns how many it sent. A
// crash between the two sends them again later: delivery is at least once, keyed by event
// id.
func (s *Service) RelayOutbox(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	for {
		due, err := s.store.OutboxDue(ctx, before, outboxBatch)
		if err != nil {
			return n, err
		}
		sent, err := s.relay(ctx, due)
		n += sent
		if err != nil || len(due) < outboxBatch {
			return n, err
		}
	}
}

// relayLink sends the outbox of the link with id, read afresh.
func (s *Service) relayLink(ctx context.Context, id string) error {
	if s.events == nil {
		return nil
	}
	l, err := s.store.FindByID(ctx, id)
	if err != nil {
		return storeError(err)
	}
	_, err = s.relay(ctx, []Link{l})
	return err
}

// relay sends the outboxes of ls and clears them. The events of a link without an owner
// go nowhere.
func (s *Service) relay(ctx context.Context, ls []Link) (int64, error) {
	var out []Published
	sent := map[string][]string{} // link id → its events now on the stream
	for _, l := range ls {
		if len(l.Outbox) == 0 {
			continue
		}
		v := s.view(l)
		v.OwnerID = ""
		for _, e := range l.Outbox {
			sent[l.ID] = append(sent[l.ID], e.ID)
			if l.OwnerID != "" {
				out = append(out, Published{ID: e.ID, Type: e.Type, At: e.At, OwnerID: l.OwnerID, Link: v})
			}
		}
	}
	if len(sent) == 0 {
		return 0, nil
	}
	if len(out) > 0 {
		if err := s.events.Append(ctx, out); err != nil {
			return 0, err
		}
	}
	return int64(len(out)), s.store.ClearOutboxes(ctx, sent)
}

// WriteExpiries writes the link.expired event of every owned link whose expiry at or
// before now owes one, and returns how many; run every few seconds, each comes within a
// minute of its expires_at.
func (s *Service) WriteExpiries(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	for {
		due, err := s.store.ExpiriesDue(ctx, now, outboxBatch)
		if err != nil {
			return n, err
		}
		for _, l := range due {
			ok, err := s.store.MarkExpired(ctx, l.ID, now)
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
		if n > 0 {
			s.kickRelay()
		}
		if len(due) < outboxBatch {
			return n, nil
		}
	}
}
