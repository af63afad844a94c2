package stack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"time"
)

// Percentiles sorts times in place and returns their median and 99th percentile; zeros
// for none.
func Percentiles(times []time.Duration) (p50, p99 time.Duration) {
	if len(times) == 0 {
		return 0, 0
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times[len(times)/2], times[len(times)*99/100]
}

// TimeGET sends GET base+path as the session's account, one request at a time, warm times
// unmeasured and then samples times, and returns p50 and p99 of the measured ones. check
// sees every answer; its error, or any status but 200, ends the measurement.
func TimeGET(ctx context.Context, base, path, session string, warm, samples int, check func(body []byte) error) (p50, p99 time.Duration, err error) {
	times := make([]time.Duration, 0, samples)
	for i := range warm + samples {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return 0, 0, err
		}
		req.AddCookie(&http.Cookie{Name: "go_session", Value: session})
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(t0)
		if err != nil {
			return 0, 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, 0, fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, body)
		}
		if check != nil {
			if err := check(body); err != nil {
				return 0, 0, fmt.Errorf("GET %s: %w", path, err)
			}
		}
		if i >= warm {
			times = append(times, took)
		}
	}
	p50, p99 = Percentiles(times)
	return p50, p99, nil
}

// FetchProfile saves to path a CPU profile, lasting d, of the service that serves its
// runtime profiles on addr (LINKMESH_DEBUG_ADDR).
func FetchProfile(ctx context.Context, addr string, d time.Duration, path string) error {
	return FetchProfileKind(ctx, addr, "profile", d, path)
}

// FetchProfileKind saves to path the profile kind (profile for CPU, mutex, block, allocs,
// trace) over the next d, of the service that serves its runtime profiles on addr: the
// counting profiles come as the difference over d, so they show what the load did.
func FetchProfileKind(ctx context.Context, addr, kind string, d time.Duration, path string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", addr, kind, max(int(d.Seconds()), 1))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s profile from %s: status %d", kind, addr, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// StartCPUProfile profiles this process (and the embedded wire server in it) into path
// until the returned stop is called; an empty path profiles nothing.
func StartCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}
