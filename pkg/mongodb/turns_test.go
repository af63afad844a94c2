package mongodb

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Writers of one key take turns, those of other keys do not wait, a writer that gives up
// waiting leaves, and nothing is kept once everyone is done.
func TestTurns(t *testing.T) {
	var turns Turns
	ctx := context.Background()
	done, err := turns.Take(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	other, err := turns.Take(ctx, "b")
	if err != nil {
		t.Fatalf("another key waited: %v", err)
	}
	other()
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := turns.Take(short, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second writer of one key got a turn while the first held it: %v", err)
	}
	next := make(chan func())
	go func() {
		d, err := turns.Take(ctx, "a")
		if err != nil {
			t.Error(err)
		}
		next <- d
	}()
	select {
	case <-next:
		t.Fatal("the next writer got its turn before the first was done")
	case <-time.After(20 * time.Millisecond):
	}
	done()
	(<-next)()
	if len(turns.held) != 0 {
		t.Fatalf("turns kept after everyone was done: %v", turns.held)
	}
}
