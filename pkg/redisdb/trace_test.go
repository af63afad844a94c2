package redisdb_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/linkmesh/linkmesh/pkg/redisdb"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// Commands and pipelines are traced without the caller's stack, and a pipeline of stream
// appends (the click producer's batches) is not traced at all.
func TestTracedCommands(t *testing.T) {
	_, url := testenv.URIs(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	ctx := context.Background()
	rdb, err := redisdb.Connect(ctx, url, tp)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	key := testenv.Name("linkmesh:test:trace")
	defer rdb.Del(ctx, key, key+":s")
	if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	appends := rdb.Pipeline()
	for range 3 {
		appends.XAdd(ctx, &redis.XAddArgs{Stream: key + ":s", Values: map[string]any{"f": "v"}})
	}
	if _, err := appends.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	mixed := rdb.Pipeline()
	mixed.XAdd(ctx, &redis.XAddArgs{Stream: key + ":s", Values: map[string]any{"f": "v"}})
	mixed.Get(ctx, key)
	if _, err := mixed.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range spans.Ended() {
		names = append(names, s.Name())
		for _, a := range s.Attributes() {
			if a.Key == "code.function" || a.Key == "code.filepath" {
				t.Errorf("span %s carries %s", s.Name(), a.Key)
			}
		}
	}
	// Beside the connections' own commands: the SET and the mixed pipeline, no span for
	// the appends alone.
	var xadds []string
	for _, n := range names {
		if strings.Contains(n, "xadd") {
			xadds = append(xadds, n)
		}
	}
	if !slices.Contains(names, "set") || !slices.Equal(xadds, []string{"redis.pipeline xadd get"}) {
		t.Fatalf("spans %q; want set and one pipeline with xadd, the mixed one", names)
	}
}
