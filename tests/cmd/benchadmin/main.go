// Command benchadmin measures what the admin overview and the moderators' link list cost as
// the links stored grow: p50 and p99 of GET /api/admin/overview and of page 1 of
// GET /api/admin/links with a few links, then again after loading many more, and the ratio
// of the two. The overview's target is a cost that does not grow with the links stored: it
// exits with status 1, after printing every figure, when its p50 grows more than maxGrowth
// times.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/linkmesh/linkmesh/services/link/linktest"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// maxGrowth is how much the overview's p50 may grow from the small to the large store.
const maxGrowth = 2.0

const adminEmail, adminPassword = "admin@bench.example", "bench-admin-password"

func main() {
	bin := flag.String("bin", "bin", "directory of the service binaries")
	small := flag.Int("small", 1000, "links stored for the first measure")
	large := flag.Int("links", 100000, "links stored for the second measure")
	samples := flag.Int("samples", 30, "measured requests per figure (after 5 to warm up)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *bin, *small, *large, *samples); err != nil {
		fmt.Fprintln(os.Stderr, "benchadmin:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, binDir string, small, large, samples int) error {
	b, err := stack.StartBench(ctx, "benchadmin", stack.ServicesOptions{BinDir: binDir, Env: map[string]string{
		"LINKMESH_BOOTSTRAP_ADMIN_EMAIL": adminEmail, "LINKMESH_BOOTSTRAP_ADMIN_PASSWORD": adminPassword}})
	if err != nil {
		return err
	}
	defer b.Stop()
	base := b.Services.GatewayURL
	root, err := stack.Login(ctx, base, adminEmail, adminPassword)
	if err != nil {
		return err
	}
	paths := []string{"/api/admin/overview", "/api/admin/links", "/api/admin/links?q=load/1234"}
	// A list that fails (the store too slow for the link service's deadline) is reported
	// with its error; only the overview decides the exit status.
	failures := map[string]error{}
	measure := func(n int) (map[string][2]time.Duration, error) {
		out := map[string][2]time.Duration{}
		for i, p := range paths {
			p50, p99, err := stack.TimeGET(ctx, base, p, root.Session, 5, samples, nil)
			if err != nil && i == 0 {
				return nil, err
			}
			if err != nil {
				failures[fmt.Sprintf("%s @%d", p, n)] = err
			}
			out[p] = [2]time.Duration{p50, p99}
			fmt.Fprintf(os.Stderr, "%d links: %s done\n", n, p)
		}
		return out, nil
	}
	now := time.Now()
	if _, err := linktest.Load(ctx, b.DB("link"), root.UserID, "sm", small, now); err != nil {
		return fmt.Errorf("load links: %w", err)
	}
	if err := waitCounted(ctx, base, root.Session, small); err != nil {
		return err
	}
	before, err := measure(small)
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := linktest.Load(ctx, b.DB("link"), "owner-2", "lg", large-small, now); err != nil {
		return fmt.Errorf("load links: %w", err)
	}
	fmt.Fprintf(os.Stderr, "loaded %d links in %s\n", large-small, time.Since(start))
	// The link counters fold the load's recorded changes before the second measure.
	if err := waitCounted(ctx, base, root.Session, large); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "counted %d links %s after the load\n", large, time.Since(start))
	after, err := measure(large)
	if err != nil {
		return err
	}
	fmt.Printf("admin reads with %d and with %d links stored; %d requests per figure, one at a time\n\n", small, large, samples)
	fmt.Printf("%-32s %12s %12s %12s %12s %8s\n", "request", fmt.Sprintf("p50 @%d", small), fmt.Sprintf("p99 @%d", small),
		fmt.Sprintf("p50 @%d", large), fmt.Sprintf("p99 @%d", large), "growth")
	var failed error
	for _, p := range paths {
		x, y := before[p], after[p]
		growth := float64(y[0]) / float64(x[0])
		fmt.Printf("%-32s %12s %12s %12s %12s %7.2fx\n", p, x[0].Round(100*time.Microsecond), x[1].Round(100*time.Microsecond),
			y[0].Round(100*time.Microsecond), y[1].Round(100*time.Microsecond), growth)
		if p == paths[0] && growth > maxGrowth {
			failed = fmt.Errorf("the overview's p50 grew %.1fx with the links stored (target ≤ %.1fx)", growth, maxGrowth)
		}
	}
	for what, err := range failures {
		fmt.Printf("%s failed: %v\n", what, err)
	}
	return failed
}

// waitCounted waits until the overview counts n links.
func waitCounted(ctx context.Context, base, session string, n int) error {
	deadline := time.Now().Add(15 * time.Minute)
	for {
		var o struct {
			Links struct {
				Total int `json:"total"`
			} `json:"links"`
		}
		_, _, err := stack.TimeGET(ctx, base, "/api/admin/overview", session, 0, 1, func(body []byte) error { return json.Unmarshal(body, &o) })
		if err == nil && o.Links.Total >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the overview counts %d links, not %d, after 15 minutes (%v)", o.Links.Total, n, err)
		}
		time.Sleep(time.Second)
	}
}
