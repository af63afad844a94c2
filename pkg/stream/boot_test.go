package stream_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// redisOnly is a service that uses Redis and nothing else.
type redisOnly struct {
	config.Service
	config.Redis
}

func (*redisOnly) Validate() error      { return nil }
func (*redisOnly) LogValue() slog.Value { return slog.GroupValue() }

// A producer and a worker run as workers of the boot path: what a request enqueues is written,
// consumed and acknowledged, and what is still queued when the service stops is flushed, not
// lost.
func TestProducerAndWorkerRunOnTheBootPath(t *testing.T) {
	_, redisURL := testenv.URIs(t)
	rdb := testenv.Redis(t)
	name := testenv.Name("boot")
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	var producer *stream.Producer
	wire := func(_ context.Context, env *service.Env) (service.Parts, error) {
		var err error
		if producer, err = stream.NewProducer(stream.ProducerOptions{Client: env.Stores.Redis, Stream: name, Logger: env.Logger}); err != nil {
			return service.Parts{}, err
		}
		worker, err := stream.NewWorker(stream.WorkerOptions{Client: env.Stores.Redis, Stream: name, Group: "g", Logger: env.Logger,
			Block: 100 * time.Millisecond, TrimInterval: -1, Handler: func(_ context.Context, msgs []stream.Message) error {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range msgs {
					seen[m.Values["id"]] = true
				}
				return nil
			}})
		if err != nil {
			return service.Parts{}, err
		}
		// c.Params is a zero-copy view of the request buffer, reused once the handler
		// returns: the producer must copy what it queues.
		env.Server.App().Post("/event/:id", func(c *fiber.Ctx) error {
			if !producer.Enqueue(map[string]any{"id": c.Params("id")}) {
				return fmt.Errorf("queue full")
			}
			return c.SendStatus(http.StatusAccepted)
		})
		return service.Parts{Workers: []func(context.Context){producer.Run, worker.Run}}, nil
	}
	cfg := &redisOnly{Service: config.Service{LogLevel: "info"}, Redis: config.Redis{URL: config.Secret(redisURL)}}
	cfg.InternalKey, cfg.InternalCerts = testenv.Internal(t, config.Analytics)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- service.Run(ctx, service.Spec{Name: config.Analytics, Config: cfg, Wire: wire},
			service.Runtime{Logger: logger(t), TracerProvider: noop.NewTracerProvider(), Listener: ln})
	}()
	post := func(i int) {
		resp, err := http.Post(fmt.Sprintf("http://%s/event/e%03d", ln.Addr(), i), "application/json", nil)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("post %d: %v %v", i, resp, err)
		}
		resp.Body.Close()
	}
	for i := range 50 {
		post(i)
	}
	eventually(t, "50 events handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 50 })
	for i := 50; i < 80; i++ {
		post(i)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := xlen(t, rdb, name); n != 80 {
		t.Fatalf("stream holds %d entries after shutdown; 80 were accepted", n)
	}
	if producer.Sent() != 80 || producer.Dropped() != 0 || producer.Failed() != 0 {
		t.Fatalf("producer sent %d, dropped %d, failed %d; want all 80 written", producer.Sent(), producer.Dropped(), producer.Failed())
	}
}
