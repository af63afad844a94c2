package mongodb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

func TestUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	duplicate := mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000, Message: "E11000 duplicate key error"}}}
	if !mongo.IsDuplicateKeyError(duplicate) {
		t.Fatal("the duplicate-key fixture is not one")
	}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a bare deadline is not known to be MongoDB's", context.DeadlineExceeded, false},
		{"deadline inside a command error", mongo.CommandError{Message: "context deadline exceeded", Wrapped: context.DeadlineExceeded}, true},
		{"server selection wrapped twice", fmt.Errorf("get link: %w", fmt.Errorf("find: %w", topology.ServerSelectionError{Wrapped: context.DeadlineExceeded})), true},
		{"server selection timed out", topology.ServerSelectionError{Wrapped: context.DeadlineExceeded}, true},
		{"server selection timed out, wrapped", fmt.Errorf("insert: %w", topology.ServerSelectionError{Wrapped: context.DeadlineExceeded}), true},
		{"no pooled connection in time", fmt.Errorf("insert link: %w", topology.WaitQueueTimeoutError{Wrapped: context.DeadlineExceeded}), true},
		{"client disconnected", mongo.ErrClientDisconnected, true},
		{"topology closed", fmt.Errorf("x: %w", topology.ErrTopologyClosed), true},
		{"network label", mongo.CommandError{Message: "connection reset", Labels: []string{"NetworkError"}}, true},
		{"max time expired", mongo.CommandError{Code: 50, Name: "MaxTimeMSExpired"}, true},
		{"shutting down", mongo.CommandError{Code: 91, Name: "ShutdownInProgress"}, true},
		{"not primary, in a write concern", mongo.WriteException{WriteConcernError: &mongo.WriteConcernError{Code: 10107}}, true},
		{"dial refused inside a connection error", fmt.Errorf("ping: %w", topology.ConnectionError{Wrapped: refused}), true},
		{"a bare dial refusal (a Redis or peer call)", fmt.Errorf("get: %w", refused), false},
		{"connection closed by peer", topology.ConnectionError{Wrapped: io.ErrUnexpectedEOF}, true},
		// The driver's own type is unexported; it is known by the interface it satisfies.
		{"pool cleared after another operation's connection broke", fmt.Errorf("insert link: %w", poolClearedLike{}), true},
		{"inside internal errs.Error", fmt.Errorf("h: %w", &errs.Error{Kind: errs.KindInternal, Message: "m", Err: topology.ConnectionError{Wrapped: refused}}), true},

		{"caller canceled", context.Canceled, false},
		{"server selection canceled", topology.ServerSelectionError{Wrapped: context.Canceled}, false},
		{"pool checkout canceled", topology.WaitQueueTimeoutError{Wrapped: context.Canceled}, false},
		{"invalid read preference", topology.ServerSelectionError{Wrapped: errors.New("max staleness (1s) must be greater than or equal to 90s")}, false},
		{"no documents", fmt.Errorf("find: %w", mongo.ErrNoDocuments), false},
		{"duplicate key", fmt.Errorf("insert: %w", duplicate), false},
		{"validation failed", mongo.CommandError{Code: 121, Name: "DocumentValidationFailure"}, false},
		{"bad value", mongo.CommandError{Code: 2, Name: "BadValue"}, false},
		{"authentication failed", topology.ConnectionError{Wrapped: errors.New("auth error: sasl conversation error")}, false},
		{"TLS alert", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, false},
		{"bare EOF from a decoder", io.EOF, false},
		{"another service's 503", errs.Unavailable("link service unavailable", errors.New("status 503")), false},
		{"plain error", errors.New("boom"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unavailable(tc.err); got != tc.want {
				t.Fatalf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	cause := fmt.Errorf("find link: %w", topology.ServerSelectionError{Wrapped: context.DeadlineExceeded})
	cases := []struct {
		name       string
		err        error
		wantStatus int // 0: Classify must return nil
	}{
		{"unavailable", cause, 503},
		{"internal errs.Error around an outage", &errs.Error{Kind: errs.KindInternal, Message: "m", Err: cause}, 503},
		{"explicit kind wins", &errs.Error{Kind: errs.KindConflict, Message: "code taken", Err: cause}, 0},
		{"not an outage", mongo.ErrNoDocuments, 0},
		{"nil", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.err)
			if tc.wantStatus == 0 {
				if got != nil {
					t.Fatalf("Classify(%v) = %v, want nil", tc.err, got)
				}
				return
			}
			if got == nil {
				t.Fatalf("Classify(%v) = nil", tc.err)
			}
			status, msg, _ := errs.Response(got)
			if status != tc.wantStatus || msg != "mongodb unavailable" || !errors.Is(got, context.DeadlineExceeded) {
				t.Fatalf("Classify(%v) → %d %q (cause kept: %v)", tc.err, status, msg, errors.Is(got, context.DeadlineExceeded))
			}
		})
	}
}

// closedAddr returns an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// silentAddr returns the address of a listener that accepts connections and never answers.
func silentAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return ln.Addr().String()
}

func quickClient(t *testing.T, addr string) *mongo.Client {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr).
		SetServerSelectionTimeout(300 * time.Millisecond).SetConnectTimeout(300 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client
}

func TestUnavailableRealFailures(t *testing.T) {
	cases := []struct {
		name string
		says string // the failure must be this one, not some other that happens to classify alike
		run  func(t *testing.T) error
		want bool
	}{
		{"insert against a closed port", "server selection error: context deadline exceeded", func(t *testing.T) error {
			_, err := quickClient(t, closedAddr(t)).Database("d").Collection("c").InsertOne(context.Background(), bson.D{{Key: "a", Value: 1}})
			return err
		}, true},
		{"find against a closed port", "server selection error: context deadline exceeded", func(t *testing.T) error {
			return quickClient(t, closedAddr(t)).Database("d").Collection("c").FindOne(context.Background(), bson.D{}).Err()
		}, true},
		{"find against a server that never answers", "server selection error: context deadline exceeded", func(t *testing.T) error {
			return quickClient(t, silentAddr(t)).Database("d").Collection("c").FindOne(context.Background(), bson.D{}).Err()
		}, true},
		{"find after disconnect", "client is disconnected", func(t *testing.T) error {
			client := quickClient(t, closedAddr(t))
			if err := client.Disconnect(context.Background()); err != nil {
				t.Fatal(err)
			}
			return client.Database("d").Collection("c").FindOne(context.Background(), bson.D{}).Err()
		}, true},
		{"caller cancels during server selection", "context canceled", func(t *testing.T) error {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return quickClient(t, closedAddr(t)).Database("d").Collection("c").FindOne(ctx, bson.D{}).Err()
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.run(t)
			if err == nil {
				t.Fatal("the operation succeeded")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("failed with %v, want a failure saying %q", err, tc.says)
			}
			wrapped := fmt.Errorf("store: %w", err)
			if got := Unavailable(wrapped); got != tc.want {
				t.Fatalf("Unavailable(%v) = %v, want %v", err, got, tc.want)
			}
			if got := Classify(wrapped) != nil; got != tc.want {
				t.Fatalf("Classify(%v) non-nil = %v, want %v", err, got, tc.want)
			}
		})
	}
}

// poolClearedLike stands for the driver's "connection pool ... was cleared" error.
type poolClearedLike struct{}

func (poolClearedLike) Error() string {
	return "connection pool for 127.0.0.1:1 was cleared because another operation failed"
}
func (poolClearedLike) Retryable() bool { return true }

func TestIsDeadlock(t *testing.T) {
	deadlock := mongo.WriteError{Index: 2, Message: "deadlock detected"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{mongo.WriteException{WriteErrors: []mongo.WriteError{deadlock}}, true},
		{fmt.Errorf("insert link: %w", mongo.WriteException{WriteErrors: []mongo.WriteError{deadlock}}), true},
		{deadlock, true},
		{mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: deadlock}}}, true},
		{mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000, Message: "E11000 duplicate key error"}}}, false},
		{errors.New("deadlock detected"), false}, // not the store's write error
		{nil, false},
	} {
		if got := IsDeadlock(tc.err); got != tc.want {
			t.Errorf("IsDeadlock(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
