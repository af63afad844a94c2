package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// ttlWait bounds the wait for a TTL deletion: the server's TTL job runs once a minute.
const ttlWait = 100 * time.Second

// wantTTLIndex checks that coll has the TTL index that deletes a document at its expires_at.
func wantTTLIndex(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range specs {
		if sp.Name == ttlIndex {
			if sp.KeysDocument.String() != `{"expires_at": {"$numberInt":"1"}}` || sp.ExpireAfterSeconds == nil || *sp.ExpireAfterSeconds != 0 {
				t.Fatalf("%s.%s = %s, expireAfterSeconds %v; want {expires_at: 1}, 0", coll.Name(), sp.Name, sp.KeysDocument, sp.ExpireAfterSeconds)
			}
			return
		}
	}
	t.Fatalf("%s has no index %s", coll.Name(), ttlIndex)
}

// waitGone polls until coll holds no document with id, for at most ttlWait.
func waitGone(t *testing.T, coll *mongo.Collection, id string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(ttlWait)
	for {
		err := coll.FindOne(ctx, byID(id)).Err()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s is still stored %s after it expired", coll.Name(), id, ttlWait)
		}
		time.Sleep(2 * time.Second)
	}
}

// The server deletes an expired session by itself, and leaves a live one.
func TestTTLDeletesExpiredSessions(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := ms(time.Now())
	for _, sess := range []accounts.Session{
		{Hash: "h-expired", UserID: "u1", CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Second)},
		{Hash: "h-live", UserID: "u1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
	} {
		if err := s.InsertSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, s.sessions, "h-expired")
	if _, err := s.SessionByHash(ctx, "h-live", time.Now()); err != nil {
		t.Fatalf("live session after the TTL deletion: %v", err)
	}
}

// The server deletes a login record once its retention has passed, and keeps a younger one.
func TestTTLDeletesLoginRecordsPastRetention(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := ms(time.Now())
	for id, age := range map[string]time.Duration{"old": testRetention + time.Second, "young": testRetention - time.Hour} {
		if err := s.InsertLoginRecord(ctx, accounts.LoginRecord{ID: id, Email: "a@example.com", Method: accounts.MethodPassword,
			CreatedAt: now.Add(-age)}); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, s.records, "old")
	if n, err := s.records.CountDocuments(ctx, bson.D{{Key: "_id", Value: "young"}}); err != nil || n != 1 {
		t.Fatalf("young record: %d, %v; want kept", n, err)
	}
}
