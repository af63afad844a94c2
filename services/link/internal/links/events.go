package links

import (
	"context"
	"sync"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
)

// Published is an event as it goes onto the event stream: the event, its link and the
// owner whose webhooks hear of it, and the link as it stands when the event leaves.
type Published struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	At      time.Time `json:"at"`
	LinkID  string    `json:"link_id"`
	OwnerID string    `json:"owner_id"`
	Link    link.Link `json:"link"`
}

// EventSink takes the links' events; *webhooks.Sink satisfies it.
type EventSink interface {
	// Append adds events to the event stream and returns once the stream holds them. Their
	// consumer takes them out of their links' outboxes (ClearOutboxes) once it has made
	// them durable elsewhere; until then they stay, and are appended again.
	Append(ctx context.Context, events []Published) error
	// Deliver makes events durable at once, without the stream: for a link about to
	// disappear with its outbox.
	Deliver(ctx context.Context, events []Published) error
}

// Relay timing.
const (
	// outboxBatch is how many links one pass of the relay reads.
	outboxBatch = 100
	// republishAfter is how long an event may stay in an outbox after it was appended
	// before it is appended again: its stream entry was lost (a Redis restart, a trim, a
	// dead letter), or the replica that wrote it died before appending it.
	republishAfter = 15 * time.Second
	// maxPending bounds the links and events a replica remembers for its relay.
	maxPending = 1 << 16
)

// relayState is what a replica's relay remembers: the links it wrote events into since its
// last pass (it appends those at once), and the events it appended lately (not again before
// republishAfter).
type relayState struct {
	mu        sync.Mutex
	written   map[string]struct{}
	published map[string]time.Time
}

// kickRelay wakes the relay of this replica: it wrote an event into the links ids.
func (s *Service) kickRelay(ids ...string) {
	s.relayState.mu.Lock()
	if s.relayState.written == nil || len(s.relayState.written) >= maxPending {
		s.relayState.written = make(map[string]struct{}) // the stale pass finds the rest
	}
	for _, id := range ids {
		s.relayState.written[id] = struct{}{}
	}
	s.relayState.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// RunRelay appends the links' events to the event stream until ctx ends: at once those this
// replica wrote, and every second those that stayed in an outbox past republishAfter
// (another replica died before appending them, or their stream entry was lost).
func (s *Service) RunRelay(ctx context.Context) {
	if s.events == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, err = s.RelayOutbox(ctx, time.Now().Add(-republishAfter))
		case <-s.kick:
			err = s.relayWritten(ctx)
		}
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "relay link events", "err", err)
		}
	}
}

// relayWritten appends the events of the links this replica wrote since its last pass.
func (s *Service) relayWritten(ctx context.Context) error {
	s.relayState.mu.Lock()
	ids := make([]string, 0, len(s.relayState.written))
	for id := range s.relayState.written {
		ids = append(ids, id)
	}
	s.relayState.written = nil
	s.relayState.mu.Unlock()
	for len(ids) > 0 {
		n := min(len(ids), outboxBatch)
		ls, err := s.store.FindByIDs(ctx, ids[:n])
		if err != nil {
			return err
		}
		if _, err := s.relay(ctx, ls); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// RelayOutbox appends the events written before before, a batch of links at a time, and
// returns how many it appended. Delivery is at least once: an event stays in its outbox
// until its consumer took it out, and may be appended more than once; deliveries are keyed
// by event.
func (s *Service) RelayOutbox(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	var after time.Time
	for {
		due, err := s.store.OutboxDue(ctx, after, before, outboxBatch)
		if err != nil {
			return n, err
		}
		sent, err := s.relay(ctx, due)
		n += sent
		if err != nil || len(due) < outboxBatch {
			s.forgetPublished()
			return n, err
		}
		// The next page: these links keep their events until the consumer takes them.
		after = latestOutbox(due)
	}
}

// latestOutbox is the latest outbox_at (oldest event) of ls: where the next page of due
// links starts.
func latestOutbox(ls []Link) time.Time {
	var t time.Time
	for _, l := range ls {
		var oldest time.Time
		for i, e := range l.Outbox {
			if i == 0 || e.At.Before(oldest) {
				oldest = e.At
			}
		}
		if oldest.After(t) {
			t = oldest
		}
	}
	return t
}

// forgetPublished drops the events appended longer than republishAfter ago.
func (s *Service) forgetPublished() {
	s.relayState.mu.Lock()
	defer s.relayState.mu.Unlock()
	cutoff := time.Now().Add(-republishAfter)
	for id, at := range s.relayState.published {
		if at.Before(cutoff) {
			delete(s.relayState.published, id)
		}
	}
}

// relay appends the events of ls this replica did not append lately. The events of a link
// without an owner are appended too: the consumer takes every event out of its outbox.
func (s *Service) relay(ctx context.Context, ls []Link) (int64, error) {
	out := s.pending(ls)
	if len(out) == 0 {
		return 0, nil
	}
	if err := s.events.Append(ctx, out); err != nil {
		return 0, err
	}
	now := time.Now()
	s.relayState.mu.Lock()
	if s.relayState.published == nil || len(s.relayState.published) >= maxPending {
		s.relayState.published = make(map[string]time.Time)
	}
	for _, e := range out {
		s.relayState.published[e.ID] = now
	}
	s.relayState.mu.Unlock()
	return int64(len(out)), nil
}

// pending is the events of ls not appended by this replica in the last republishAfter.
func (s *Service) pending(ls []Link) []Published {
	cutoff := time.Now().Add(-republishAfter)
	s.relayState.mu.Lock()
	defer s.relayState.mu.Unlock()
	var out []Published
	for _, l := range ls {
		if len(l.Outbox) == 0 {
			continue
		}
		v := s.view(l)
		v.OwnerID = ""
		for _, e := range l.Outbox {
			if at, ok := s.relayState.published[e.ID]; ok && at.After(cutoff) {
				continue
			}
			out = append(out, Published{ID: e.ID, Type: e.Type, At: e.At, LinkID: l.ID, OwnerID: l.OwnerID, Link: v})
		}
	}
	return out
}

// deliverLink makes the events of the link with id durable at once (a permanent deletion is
// about to remove the link with its outbox).
func (s *Service) deliverLink(ctx context.Context, id string) error {
	if s.events == nil {
		return nil
	}
	l, err := s.store.FindByID(ctx, id)
	if err != nil {
		return storeError(err)
	}
	v := s.view(l)
	v.OwnerID = ""
	var out []Published
	for _, e := range l.Outbox {
		out = append(out, Published{ID: e.ID, Type: e.Type, At: e.At, LinkID: l.ID, OwnerID: l.OwnerID, Link: v})
	}
	if len(out) == 0 {
		return nil
	}
	return s.events.Deliver(ctx, out)
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
		var marked []string
		for _, l := range due {
			ok, err := s.store.MarkExpired(ctx, l.ID, now)
			if err != nil {
				return n, err
			}
			if ok {
				n++
				marked = append(marked, l.ID)
			}
		}
		if len(marked) > 0 {
			s.kickRelay(marked...)
		}
		if len(due) < outboxBatch {
			return n, nil
		}
	}
}
