package clicks

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

const benchAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"

func benchVisit(i int) Visit {
	return Visit{LinkID: "6756a1c2e4b0a7f3d9c81e25", OwnerID: "6756a1c2e4b0a7f3d9c81e26", Code: "bench" + strconv.Itoa(i%1000),
		At: time.Now(), IP: netip.AddrFrom4([4]byte{81, 2, 69, byte(i)}), UserAgent: benchAgent,
		Referer: "https://news.example.com/item?id=" + strconv.Itoa(i%50), EventID: "00112233445566778899aabbccddeeff"}
}

// BenchmarkEnrich measures each step the recorder takes per click, and all of them: the
// goal is at most a microsecond each, amortised, and no allocation but the click's value.
func BenchmarkEnrich(b *testing.B) {
	e, err := NewEnricher(nil, fixedSalts("salt"))
	if err != nil {
		b.Fatal(err)
	}
	visits := make([]Visit, 1000)
	for i := range visits {
		visits[i] = benchVisit(i)
	}
	e.agent(benchAgent) // parsed once, then kept
	b.Run("user-agent", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if e.agent(visits[i%len(visits)].UserAgent).robot {
				b.Fatal("a browser taken for a robot")
			}
		}
	})
	b.Run("referrer", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if ReferrerHost(visits[i%len(visits)].Referer) != "news.example.com" {
				b.Fatal("wrong referrer")
			}
		}
	})
	b.Run("visitor-hash", func(b *testing.B) {
		var out [visitorLen]byte
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			v := &visits[i%len(visits)]
			if !e.visitor(v.At, v.IP, v.UserAgent, &out) {
				b.Fatal("no visitor")
			}
		}
	})
	if path := os.Getenv("LINKMESH_TEST_GEOIP_DB"); path != "" {
		g, err := OpenGeoIP(path)
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		b.Run("country", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if g.Country(visits[i%len(visits)].IP) != "GB" {
					b.Fatal("wrong country")
				}
			}
		})
		e.countries = g
	}
	b.Run("spool-view", func(b *testing.B) {
		s, _, _, err := openSpool("", minSpool)
		if err != nil {
			b.Fatal(err)
		}
		rec := s.encode(nil, &visits[0])
		var id [2 * idSize]byte
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, ok := view(rec, &id); !ok {
				b.Fatal("unreadable record")
			}
		}
	})
	b.Run("click-value", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var ok bool
			if buf, ok = e.AppendClick(buf[:0], visits[i%len(visits)]); !ok {
				b.Fatal("no click")
			}
		}
	})
}

// BenchmarkRecorder measures a click from the redirect's Record to its entry on a real
// Redis stream: the spool, the enrichment and the producer's appends, per click.
func BenchmarkRecorder(b *testing.B) {
	rdb := testenv.Redis(b)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := NewEnricher(nil, fixedSalts("salt"))
	if err != nil {
		b.Fatal(err)
	}
	name := testenv.Name("bench-clicks")
	defer rdb.Del(context.Background(), name)
	p, err := stream.NewProducer(stream.ProducerOptions{Client: rdb, Stream: name, Logger: log, BatchSize: 500, QueueSize: 10000})
	if err != nil {
		b.Fatal(err)
	}
	dir := os.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dir = "/dev/shm"
	}
	spool, err := os.MkdirTemp(dir, "bench-spool-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(spool)
	r, err := NewRecorder(RecorderOptions{QueueSize: 1 << 20, SpoolPath: filepath.Join(spool, "clicks"), SpoolSize: 32 << 20, Enricher: e, Producer: p, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	visits := make([]Visit, 1000)
	for i := range visits {
		visits[i] = benchVisit(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		r.Record(visits[i%len(visits)])
		if i%1000 == 999 {
			for depth, _ := r.Queue(); depth > 100000; depth, _ = r.Queue() {
				time.Sleep(time.Millisecond) // the spool is bounded; so is any real load
			}
		}
	}
	for r.Published() < int64(b.N) && r.Dropped() == 0 {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	// What the gateway's core pays per click: Record, and Run's enrichment and appends (the
	// wall time per click also holds Redis's work, on the other core).
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	cancel()
	<-done
	if r.Dropped() != 0 || r.Published() != int64(b.N) {
		b.Fatalf("published %d of %d, dropped %d", r.Published(), b.N, r.Dropped())
	}
	if n := len(streamClicks(b, rdb, name)); n != b.N {
		b.Fatalf("%d clicks on the stream, want %d", n, b.N)
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
