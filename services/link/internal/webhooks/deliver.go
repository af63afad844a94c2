package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// retrySchedule is the wait before each retry, in units of the retry base (5 s): 5 s,
// 5 min, 30 min, 2 h, 5 h, 8 h, 8 h — about 24 h after the first attempt, then failed.
var retrySchedule = []time.Duration{1, 60, 360, 1440, 3600, 5760, 5760}

// claimLease is how long a claimed delivery is left to its sender before another may take
// it (a sender that died mid-attempt): three times the longest attempt (5 s), so a live
// sender always records its outcome first, and a dead one's delivery goes again soon.
const claimLease = 15 * time.Second

// payload is the body of an event's deliveries.
func payload(typ string, at time.Time, data any) string {
	b, _ := json.Marshal(struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Data      any    `json:"data"`
	}{typ, at.UTC().Format(time.RFC3339Nano), data})
	return string(b)
}

// Sign is the Standard Webhooks signature of body sent as message id at ts with secret:
// "v1," and the base64 HMAC-SHA256 of "<id>.<ts>.<body>".
func Sign(secret []byte, id string, ts int64, body string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// HandleEvents is the link-events stream's handler: each event becomes one pending
// delivery per active webhook of its owner that subscribed to its type, all of a batch read
// and written at once; then the events leave their links' outboxes, where they stayed until
// now (a lost stream entry is appended again from there). A delivery's id comes from its
// webhook and event, so an event handed over twice is delivered once.
func (s *Service) HandleEvents(ctx context.Context, msgs []stream.Message) error {
	events := make([]links.Published, 0, len(msgs))
	for _, m := range msgs {
		var e links.Published
		if err := json.Unmarshal([]byte(m.Values["event"]), &e); err != nil || e.ID == "" {
			s.log.WarnContext(ctx, "skip an unreadable link event", "stream_id", m.ID, "err", err)
			continue
		}
		events = append(events, e)
	}
	if len(events) == 0 {
		return nil
	}
	if err := s.fanOut(ctx, events); err != nil {
		return err
	}
	s.clearMu.Lock()
	if s.toClear == nil {
		s.toClear = map[string][]string{}
	}
	for _, e := range events {
		if e.LinkID != "" && len(s.toClear) < maxToClear {
			s.toClear[e.LinkID] = append(s.toClear[e.LinkID], e.ID)
		}
	}
	s.clearMu.Unlock()
	return nil
}

// maxToClear bounds the links whose outboxes wait to be cleared; beyond it, their events
// stay and are appended again later (and delivered once: deliveries are keyed by event).
const maxToClear = 1 << 16

// RunClearer takes the events whose deliveries are written out of their links' outboxes,
// in batches every quarter second, until ctx ends: off the fan-out's path, so a delivery
// does not wait for it. A crash before it leaves the events where they are, to be appended
// again and found delivered.
func (s *Service) RunClearer(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.clearMu.Lock()
		batch := s.toClear
		s.toClear = nil
		s.clearMu.Unlock()
		if len(batch) == 0 || s.outbox == nil {
			continue
		}
		if err := s.outbox.ClearOutboxes(ctx, batch); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "clear delivered events from their links", "links", len(batch), "err", err)
		}
	}
}

// fanOut writes one pending delivery per event and active webhook of its owner subscribed
// to its type, in one write.
func (s *Service) fanOut(ctx context.Context, events []links.Published) error {
	var owners []string
	for _, e := range events {
		if e.OwnerID != "" && !slices.Contains(owners, e.OwnerID) {
			owners = append(owners, e.OwnerID)
		}
	}
	if len(owners) == 0 {
		return nil
	}
	hooks, err := s.store.HooksOfOwners(ctx, owners)
	if err != nil {
		return err
	}
	byOwner := map[string][]Hook{}
	for _, h := range hooks {
		if h.Active {
			byOwner[h.OwnerID] = append(byOwner[h.OwnerID], h)
		}
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	var ds []Delivery
	for _, e := range events {
		body := ""
		for _, h := range byOwner[e.OwnerID] {
			if !slices.Contains(h.Events, e.Type) {
				continue
			}
			if body == "" {
				body = payload(e.Type, e.At, map[string]any{"link": e.Link})
			}
			ds = append(ds, newDelivery(h, e.ID, e.Type, body, now))
		}
	}
	if len(ds) == 0 {
		return nil
	}
	if err := s.store.InsertDeliveries(ctx, ds); err != nil {
		return err
	}
	s.wake()
	return nil
}

// wake tells this replica's sender that deliveries are due.
func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// RunDeliveries sends due deliveries until ctx ends: at once when this replica queued one,
// and every half second for the rest (retries, other replicas' fan-outs).
func (s *Service) RunDeliveries(ctx context.Context) {
	client := s.guard.Client()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
		for ctx.Err() == nil {
			n, err := s.sendDue(ctx, client, &wg)
			if err != nil {
				s.log.WarnContext(ctx, "send webhook deliveries", "err", err)
				break
			}
			if n == 0 {
				break
			}
		}
	}
}

// claimBatch is how many due deliveries one claim takes.
const claimBatch = 64

// sendDue claims the deliveries due now and starts sending them, at most maxSenders at a
// time; it returns how many it claimed.
func (s *Service) sendDue(ctx context.Context, client *http.Client, wg *sync.WaitGroup) (int, error) {
	now := s.now()
	due, err := s.store.ClaimDue(ctx, now, now.Add(claimLease).UTC().Truncate(time.Millisecond), claimBatch)
	if err != nil {
		return 0, err
	}
	hooks := map[string]*Hook{} // read once per batch
	for i, d := range due {
		h, ok := hooks[d.WebhookID]
		if !ok {
			got, err := s.store.HookByID(ctx, d.WebhookID)
			switch {
			case err == nil:
				h = &got
			case !errors.Is(err, ErrNotFound):
				return i, err // the claims lapse and other attempts come
			}
			hooks[d.WebhookID] = h
		}
		select {
		case s.senders <- struct{}{}:
		case <-ctx.Done():
			return i, nil
		}
		wg.Go(func() {
			defer func() { <-s.senders }()
			s.attempt(context.WithoutCancel(ctx), client, h, d)
		})
	}
	return len(due), nil
}

// attempt sends d once and records the outcome: delivered on a 2xx within the time bound;
// otherwise the next retry of the schedule, or failed when the schedule is spent. Its
// webhook is switched off once all its deliveries have failed for DisableAfter.
func (s *Service) attempt(ctx context.Context, client *http.Client, hook *Hook, d Delivery) {
	if hook == nil {
		// Its webhook was deleted, and the deliveries' deletion did not happen (yet).
		gone := "the webhook was deleted"
		claimed := d.NextAttemptAt
		d.Status, d.LastError = link.DeliveryFailed, &gone
		if _, err := s.store.SaveAttempt(ctx, d, claimed); err != nil {
			s.log.WarnContext(ctx, "end a delivery of a deleted webhook", "delivery_id", d.ID, "err", err)
		}
		return
	}
	h := *hook
	claimed := d.NextAttemptAt
	if !h.Active && d.Type != link.EventPing {
		// Switched off: what was still pending ends (a ping still goes: it is how the owner
		// tries a fixed receiver).
		off := "the webhook is disabled"
		d.Status, d.LastError = link.DeliveryFailed, &off
		if _, err := s.store.SaveAttempt(ctx, d, claimed); err != nil {
			s.log.WarnContext(ctx, "end a delivery of a disabled webhook", "delivery_id", d.ID, "err", err)
		}
		return
	}
	code, failure := s.send(ctx, client, h, d)
	now := s.now().UTC().Truncate(time.Millisecond)
	d.Attempts++
	d.LastStatusCode, d.LastError = code, nil
	switch {
	case failure == "":
		d.Status, d.DeliveredAt = link.DeliveryDelivered, &now
	case d.Attempts > len(retrySchedule):
		d.Status, d.LastError = link.DeliveryFailed, &failure
	default:
		d.LastError = &failure
		d.NextAttemptAt = now.Add(retrySchedule[d.Attempts-1] * s.retryBase)
	}
	if saved, err := s.store.SaveAttempt(ctx, d, claimed); err != nil || !saved {
		if err != nil {
			s.log.WarnContext(ctx, "record a webhook delivery", "delivery_id", d.ID, "err", err)
		}
		return
	}
	if d.Type == link.EventPing {
		return // a test tells its owner, not the webhook's standing
	}
	at := now
	if failure == "" {
		// Cleared whatever this batch read of the webhook: another attempt of it may have
		// failed since (the store's update does nothing when there is nothing to clear).
		at = time.Time{}
	}
	since, err := s.store.SetFailing(ctx, h.ID, at)
	if err != nil {
		s.log.WarnContext(ctx, "record a webhook's failures", "webhook_id", h.ID, "err", err)
		return
	}
	if h.Active && since != nil && now.Sub(*since) >= s.disableAfter {
		reason := "every delivery failed for " + span(s.disableAfter)
		if err := s.store.DisableHook(ctx, h.ID, reason); err != nil {
			s.log.WarnContext(ctx, "disable a failing webhook", "webhook_id", h.ID, "err", err)
		}
	}
}

// send posts d to h, signed; it returns the answer's status code, if any, and "" when
// delivered or what went wrong. The body of the answer is read up to a bound and dropped.
func (s *Service) send(ctx context.Context, client *http.Client, h Hook, d Delivery) (*int, string) {
	secret, err := s.open(h.SealedSecret)
	if err != nil {
		return nil, "the webhook's secret cannot be read"
	}
	ts := s.now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, strings.NewReader(d.Payload))
	if err != nil {
		return nil, "the webhook's url cannot be requested"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "linkmesh-webhooks/1")
	req.Header.Set("webhook-id", d.EventID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Sign(secret, d.EventID, ts, d.Payload))
	resp, err := client.Do(req)
	if err != nil {
		return nil, describe(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return &code, ""
	case code >= 300 && code < 400:
		return &code, "redirects are not followed"
	}
	return &code, "the receiver answered " + strconv.Itoa(code)
}

// describe says why a request failed, without the receiver's own words.
func describe(err error) string {
	switch {
	case errors.Is(err, errNotPermitted):
		return errNotPermitted.Error()
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(err.Error(), "Client.Timeout"):
		return "no answer within 5s"
	}
	return "connection failed"
}

// span says d in days when it is whole days.
func span(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		if n := d / (24 * time.Hour); n > 1 {
			return strconv.Itoa(int(n)) + " days"
		}
		return "1 day"
	}
	return d.String()
}
