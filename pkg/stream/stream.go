// Package stream is how linkmesh services pass events through Redis Streams: a Producer
// that batches entries onto a stream without ever blocking its caller, and a Worker that
// consumes a stream in a consumer group, at least once, reclaiming what dead consumers left,
// setting poison entries aside and trimming what every group has acknowledged.
//
// Delivery is at least once: an entry is acknowledged only after its handler returned nil,
// so a crash, a timeout or a Redis failure between the two hands it over again. Handlers
// must therefore be idempotent, keyed by a business id carried in the values rather than by
// the stream id (a producer retrying a failed flush may write an entry twice).
package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Message is one stream entry as a Handler sees it.
type Message struct {
	// ID is the stream entry id ("1700000000000-0"); it orders entries but is not a
	// business id: the same event written twice gets two ids.
	ID string
	// Values are the entry's fields. Redis stores every field as a string, so Values holds
	// strings, whatever type the producer enqueued.
	Values map[string]string
}

// Handler processes a batch of entries. Returning nil acknowledges the whole batch; an
// error leaves all of it pending, to be delivered again.
type Handler func(ctx context.Context, msgs []Message) error

// Fields a Worker adds to an entry it copies to the dead-letter stream, beside the entry's
// own values (which they override should a field share one of these names).
const (
	// FieldDeadID is the id the entry had in the original stream.
	FieldDeadID = "dead_id"
	// FieldDeadGroup is the consumer group that gave up on the entry.
	FieldDeadGroup = "dead_group"
	// FieldDeadDeliveries is how many times the entry had been delivered to that group.
	FieldDeadDeliveries = "dead_deliveries"
)

// DeadStream names the stream that receives the poison entries of stream. A worker writes
// there and acknowledges in one transaction, so on a Redis Cluster both must share a slot:
// the name is stream in a hash tag ("{clicks}:dead" hashes as "clicks" does), unless stream
// carries a tag of its own.
func DeadStream(stream string) string {
	if strings.Contains(stream, "{") {
		return stream + ":dead"
	}
	return "{" + stream + "}:dead"
}

// DefaultConsumer returns a consumer name unique to this process: the hostname, which
// tells an operator where a consumer runs, and a random suffix, because two replicas on one
// host (or a restarted pod keeping its name) must not share pending entries by accident.
func DefaultConsumer() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "consumer"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// toMessages converts entries read from Redis. Entries deleted from the stream while
// pending come back without values; they are returned apart as gone, since there is
// nothing left to handle, only a pending slot to release.
func toMessages(xs []redis.XMessage) (msgs []Message, gone []string) {
	msgs = make([]Message, 0, len(xs))
	for _, x := range xs {
		if x.Values == nil {
			gone = append(gone, x.ID)
			continue
		}
		values := make(map[string]string, len(x.Values))
		for k, v := range x.Values {
			values[k] = valueString(v)
		}
		msgs = append(msgs, Message{ID: x.ID, Values: values})
	}
	return msgs, gone
}

// valueString renders a field value the way Redis would store it.
func valueString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(v)
	}
}

// isReply reports whether err, however wrapped, is a Redis error reply starting with prefix.
func isReply(err error, prefix string) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), prefix)
}

// sleep waits d, or less if ctx ends first, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
