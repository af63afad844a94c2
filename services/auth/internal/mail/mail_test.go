package mail

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/testenv"
)

func TestNewSMTPChecksTheURL(t *testing.T) {
	for _, bad := range []string{"", "http://mail.example.com", "smtp://", "smtp://host:0", "smtp://host:99999",
		"smtp://host/path", "mail.example.com:25", "smtp://host:x"} {
		if _, err := NewSMTP(bad, "linkmesh <no-reply@example.com>"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := NewSMTP("smtp://127.0.0.1:2525", "not an address"); err == nil {
		t.Error("a bad From accepted")
	}
	s, err := NewSMTP("smtps://user:s3cret@mail.example.com", "linkmesh <no-reply@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.String(), "s3cret") {
		t.Fatalf("the password shows in %q", s)
	}
}

func TestPause(t *testing.T) {
	want := map[int]time.Duration{1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 9: 2560 * time.Second, 10: time.Hour, 50: time.Hour}
	for n, d := range want {
		if got := Pause(n); got != d {
			t.Errorf("Pause(%d) = %v, want %v", n, got, d)
		}
	}
}

// Mail goes through a real SMTP server from the outbox: sent at once, each message once
// even with two relays at work, a retried enqueue stored once; while the server is away a
// message waits with growing pauses and goes once it is back; a message no server can take
// is given up and kept for an operator.
func TestOutboxThroughSMTP(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := context.Background()
	sink, err := testenv.StartMailSink(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Stop()
	sender, err := NewSMTP(sink.SMTPURL, "linkmesh <no-reply@linkmesh.example>")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewOutbox(ctx, db, sender, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewOutbox(ctx, db, sender, nil)
	for i := range 6 {
		m := Message{To: fmt.Sprintf("ada%d@example.com", i), Subject: "Verify\nyour address", Text: fmt.Sprintf("Open https://sho.rt/#/verify?token=t%d\n", i)}
		if err := a.Enqueue(ctx, fmt.Sprintf("m%d", i), m); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Enqueue(ctx, "m0", Message{To: "ada0@example.com", Subject: "again", Text: "again"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, o := range []*Outbox{a, b} {
		wg.Go(func() {
			if err := o.SendDue(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := sink.Messages()
	if len(got) != 6 {
		t.Fatalf("%d messages received, want 6: %+v", len(got), got)
	}
	seen := map[string]bool{}
	for _, m := range got {
		if seen[m.To[0]] || m.Subject != "Verify your address" || !strings.Contains(m.Text, "https://sho.rt/#/verify?token=t") ||
			m.From != "no-reply@linkmesh.example" {
			t.Fatalf("message %+v (seen before: %v)", m, seen[m.To[0]])
		}
		seen[m.To[0]] = true
	}
	if n, _ := db.Collection(Collection).CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d sent messages still in the outbox", n)
	}

	// The server goes away: the message waits, and goes once it is back.
	down, err := NewSMTP("smtp://127.0.0.1:1", "linkmesh <no-reply@linkmesh.example>")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	clock := func() time.Time { return now }
	away, _ := NewOutbox(ctx, db, down, nil)
	away.now = clock
	if err := away.Enqueue(ctx, "late", Message{To: "bob@example.com", Subject: "Reset", Text: "a link"}); err != nil {
		t.Fatal(err)
	}
	if err := away.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	var d doc
	if err := db.Collection(Collection).FindOne(ctx, bson.D{{Key: "_id", Value: "late"}}).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Attempts != 1 || d.DueAt == nil || d.DueAt.Sub(now) < 9*time.Second || d.LastError == "" {
		t.Fatalf("after a failed attempt: %+v", d)
	}
	back, _ := NewOutbox(ctx, db, sender, nil)
	back.now = func() time.Time { return now.Add(11 * time.Second) }
	if err := back.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sink.Messages(); len(got) != 7 || got[0].To[0] != "bob@example.com" {
		t.Fatalf("the delayed message did not arrive: %+v", got[0])
	}

	// Past three days of failures it is given up, kept as failed, no longer due.
	away.now = func() time.Time { return now.Add(72 * time.Hour) }
	if err := away.Enqueue(ctx, "old", Message{To: "carol@example.com", Subject: "x", Text: "y"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection(Collection).UpdateOne(ctx, bson.D{{Key: "_id", Value: "old"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "created_at", Value: now}}}}); err != nil {
		t.Fatal(err)
	}
	if err := away.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	d = doc{}
	if err := db.Collection(Collection).FindOne(ctx, bson.D{{Key: "_id", Value: "old"}}).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.FailedAt == nil || d.DueAt != nil || d.ExpiresAt == nil {
		t.Fatalf("a message past its three days: %+v", d)
	}
	if !IsPermanent(permanent(errors.New("x"))) || IsPermanent(errors.New("x")) {
		t.Fatal("IsPermanent")
	}
}
