package redisdb

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// transientReplies are the prefixes of server replies that mean "not now" rather than "not
// this": the dataset is still loading, the master or cluster is down, or a slot is moving.
var transientReplies = []string{"LOADING ", "MASTERDOWN ", "TRYAGAIN ", "CLUSTERDOWN "}

// Unavailable reports whether err, however deeply wrapped, means Redis could not be reached or
// did not answer in time, so a client should see a 503 rather than a 500.
//
// A canceled context never counts: the caller went away, and redis.Nil is an answer.
func Unavailable(err error) bool {
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, redis.ErrClosed),
		// The server closed the connection under us.
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	// Dial, read and write failures; a TLS alert from the peer is a refusal of our
	// certificate, not an outage.
	if opErr := (*net.OpError)(nil); errors.As(err, &opErr) && opErr.Op != "remote error" {
		return true
	}
	if re := redis.Error(nil); errors.As(err, &re) {
		msg := strings.TrimPrefix(re.Error(), "ERR ") // KVRocks prefixes every reply with ERR
		for _, prefix := range transientReplies {
			if strings.HasPrefix(msg, prefix) {
				return true
			}
		}
	}
	return false
}

// Classify answers 503 "redis unavailable" for the errors Unavailable recognises.
func Classify(err error) *errs.Error { return errs.Outage("redis unavailable", Unavailable)(err) }
