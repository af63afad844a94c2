package mongodb

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// transientServerCodes are the server error codes the driver itself retries: the node is
// unreachable, shutting down, stepping down or out of time, so the same request can succeed
// once the deployment recovers. No mistake of the caller produces one of them.
var transientServerCodes = []int{
	6,     // HostUnreachable
	7,     // HostNotFound
	89,    // NetworkTimeout
	91,    // ShutdownInProgress
	134,   // ReadConcernMajorityNotAvailableYet
	189,   // PrimarySteppedDown
	262,   // ExceededTimeLimit
	9001,  // SocketException
	10107, // NotWritablePrimary
	11600, // InterruptedAtShutdown
	11602, // InterruptedDueToReplStateChange
	13435, // NotPrimaryNoSecondaryOk
	13436, // NotPrimaryOrSecondary
}

// Unavailable reports whether err, however deeply wrapped, is the driver saying MongoDB could
// not be reached or did not answer in time, so a client should see a 503 rather than a 500.
//
// A canceled context never counts: the caller went away, although the driver reports that in
// the same server-selection and connection errors an outage produces.
func Unavailable(err error) bool {
	switch {
	case err == nil, errors.Is(err, context.Canceled), !fromDriver(err):
		return false
	case errors.Is(err, mongo.ErrClientDisconnected), errors.Is(err, topology.ErrTopologyClosed):
		return true
	// A server-selection timeout (topology.ServerSelectionError wrapping the deadline) is caught
	// by IsTimeout. The same type without a timeout is an invalid read preference, which no
	// amount of waiting fixes, so the type alone is not enough.
	case mongo.IsNetworkError(err), mongo.IsTimeout(err), connectionLost(err), poolCleared(err):
		return true
	}
	if se := mongo.ServerError(nil); errors.As(err, &se) {
		for _, code := range transientServerCodes {
			if se.HasErrorCode(code) {
				return true
			}
		}
	}
	return false
}

// fromDriver reports whether err came out of the MongoDB driver. Deadlines and socket errors
// look alike whatever produced them (a Redis call, a peer), and only the driver's own are
// MongoDB's to answer for.
func fromDriver(err error) bool {
	var (
		sel  topology.ServerSelectionError
		conn topology.ConnectionError
		srv  mongo.ServerError
		// No connection came free of the pool in time: every one is stuck on a server that
		// stopped answering.
		wait topology.WaitQueueTimeoutError
	)
	return errors.As(err, &sel) || errors.As(err, &conn) || errors.As(err, &srv) || errors.As(err, &wait) || poolCleared(err) ||
		errors.Is(err, mongo.ErrClientDisconnected) || errors.Is(err, topology.ErrTopologyClosed)
}

// poolCleared reports whether err is the driver's "connection pool ... was cleared": another
// operation on the same server lost its connection, and every operation waiting for one is
// turned away with this (a retryable pool error) rather than with a network error.
func poolCleared(err error) bool {
	var rpe driver.RetryablePoolError
	return errors.As(err, &rpe) && rpe.Retryable()
}

// connectionLost catches socket failures that reach the caller without the driver's
// NetworkError label, as when a connection breaks outside an operation.
func connectionLost(err error) bool {
	// A TLS alert from the peer is a refusal of our certificate, not an outage.
	if opErr := (*net.OpError)(nil); errors.As(err, &opErr) && opErr.Op != "remote error" {
		return true
	}
	// EOF counts only from a connection: a decoder says EOF about truncated data too.
	ce := topology.ConnectionError{}
	return errors.As(err, &ce) && (errors.Is(ce.Wrapped, io.EOF) || errors.Is(ce.Wrapped, io.ErrUnexpectedEOF))
}

// Classify answers 503 "mongodb unavailable" for the errors Unavailable recognises.
func Classify(err error) *errs.Error { return errs.Outage("mongodb unavailable", Unavailable)(err) }

// IsDeadlock tells a write the store aborted to break a deadlock. DocumentDB enforces a
// unique index with a PostgreSQL exclusion constraint, and concurrent inserts of one key
// (with updates of it) can wait on each other until PostgreSQL aborts one, answered as a
// write error "deadlock detected" without a MongoDB code. MongoDB answers no such thing for
// single-document writes; the write can simply be made again.
func IsDeadlock(err error) bool {
	var we mongo.WriteException
	if errors.As(err, &we) {
		for _, e := range we.WriteErrors {
			if IsDeadlock(e) {
				return true
			}
		}
		return false
	}
	var one mongo.WriteError
	if errors.As(err, &one) {
		return strings.Contains(one.Message, "deadlock detected")
	}
	var bulk mongo.BulkWriteException
	if errors.As(err, &bulk) {
		for _, e := range bulk.WriteErrors {
			if IsDeadlock(e.WriteError) {
				return true
			}
		}
	}
	return false
}
