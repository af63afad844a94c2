// Command benchowner measures an owner with many links through the full stack: p50 and p99
// of GET /api/user/links (page 1, a page deep inside, with and without q) and of the
// dashboard, each against its target. It exits with status 1, after printing every figure,
// when a p50 misses its target.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linkmesh/linkmesh/services/link/linktest"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// maxP50 is the target of every figure: the median answer within 50 ms.
const maxP50 = 50 * time.Millisecond

func main() {
	bin := flag.String("bin", "bin", "directory of the service binaries")
	n := flag.Int("links", 20000, "links the owner has")
	samples := flag.Int("samples", 100, "measured requests per figure (after 10 to warm up)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the measured requests to this file; the embedded MongoDB wire server runs in this process, so it shows where the store spends its time")
	linkProfile := flag.String("link-profile", "", "write a CPU profile of the link service during the measured requests to this file")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *bin, *n, *samples, *profile, *linkProfile); err != nil {
		fmt.Fprintln(os.Stderr, "benchowner:", err)
		os.Exit(1)
	}
}

// linkDebugAddr is where the link service serves its runtime profiles when asked for one.
const linkDebugAddr = "127.0.0.1:16062"

func run(ctx context.Context, binDir string, n, samples int, profile, linkProfile string) error {
	opts := stack.ServicesOptions{BinDir: binDir}
	if linkProfile != "" {
		opts.ServiceEnv = map[string]map[string]string{"link": {"LINKMESH_DEBUG_ADDR": linkDebugAddr}}
	}
	b, err := stack.StartBench(ctx, "benchowner", opts)
	if err != nil {
		return err
	}
	defer b.Stop()
	svcs := b.Services

	acct, err := stack.Register(ctx, svcs.GatewayURL, "owner@bench.example")
	if err != nil {
		return err
	}

	start := time.Now()
	if _, err := linktest.Load(ctx, b.DB("link"), acct.UserID, "bn", n, time.Now()); err != nil {
		return fmt.Errorf("load links: %w", err)
	}
	loaded := time.Since(start)
	fmt.Fprintf(os.Stderr, "loaded %d links in %s\n", n, loaded)
	fmt.Printf("owner with %d links (loaded in %s); %d requests per figure, one at a time\n\n", n,
		loaded.Round(time.Millisecond), samples)
	fmt.Printf("%-42s %10s %10s   %s\n", "request", "p50", "p99", "target p50")
	stopProfile, err := stack.StartCPUProfile(profile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var profiled sync.WaitGroup
	defer profiled.Wait() // before the stack stops
	if linkProfile != "" {
		// As long as every figure takes at the target; slower runs are profiled in part.
		d := time.Duration(6*(10+samples)) * maxP50
		profiled.Go(func() {
			if err := stack.FetchProfile(ctx, linkDebugAddr, d, linkProfile); err != nil {
				fmt.Fprintln(os.Stderr, "link profile:", err)
			}
		})
	}
	deep := n / 2 / 20
	var missed []string
	for _, path := range []string{
		"/api/user/links",
		fmt.Sprintf("/api/user/links?page=%d", deep),
		"/api/user/links?q=load/1234",
		fmt.Sprintf("/api/user/links?q=load/1234&page=%d", 2),
		"/api/user/links?status=active&page=" + fmt.Sprint(deep),
		"/api/user/dashboard",
	} {
		p50, p99, err := stack.TimeGET(ctx, svcs.GatewayURL, path, acct.Session, 10, samples, nil)
		if err != nil {
			return err
		}
		verdict := "met"
		if p50 > maxP50 {
			verdict = "MISSED"
			missed = append(missed, path)
		}
		fmt.Fprintf(os.Stderr, "%s done\n", path)
		fmt.Printf("%-42s %10s %10s   ≤ %s: %s\n", path, p50.Round(time.Microsecond*100), p99.Round(time.Microsecond*100), maxP50, verdict)
	}
	if len(missed) > 0 {
		return fmt.Errorf("benchmark target missed: %s", strings.Join(missed, ", "))
	}
	return nil
}
