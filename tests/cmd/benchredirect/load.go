package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// benchUserAgent is the browser the load claims to be.
const benchUserAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"

// createLinks shortens n IP-literal destinations (no DNS involved) for the account of session
// and returns code → destination.
func createLinks(ctx context.Context, gateway, session string, n int) (map[string]string, error) {
	codes := make(map[string]string, n)
	for i := range n {
		dest := fmt.Sprintf("https://93.184.216.34/bench/%d", i)
		code, _, err := stack.Shorten(ctx, http.DefaultClient, gateway, dest, stack.WithSession(session))
		if err != nil {
			return nil, err
		}
		codes[code] = dest
	}
	return codes, nil
}

// visitAll requests every code once and insists on a 302.
func visitAll(ctx context.Context, base string, codes map[string]string) error {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for code, dest := range codes {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/"+code, nil)
		req.Header.Set("User-Agent", benchUserAgent)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != dest {
			return fmt.Errorf("%s/%s answered %d %q", base, code, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	return nil
}

// writeCodes writes the baseline's table and wrk's script picking a random code per request.
func writeCodes(codes map[string]string, tsvPath, luaPath string) error {
	var tsv, lua strings.Builder
	lua.WriteString("local codes = {\n")
	for code, dest := range codes {
		fmt.Fprintf(&tsv, "%s\t%s\n", code, dest)
		fmt.Fprintf(&lua, "  %q,\n", "/"+code)
	}
	// A browser's User-Agent: every answered visit is a click to record, as in real traffic.
	lua.WriteString("}\nmath.randomseed(42)\nwrk.headers[\"User-Agent\"] = \"" + benchUserAgent + "\"\nrequest = function()\n  return wrk.format(\"GET\", codes[math.random(#codes)])\nend\n")
	if err := os.WriteFile(tsvPath, []byte(tsv.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(luaPath, []byte(lua.String()), 0o644); err != nil {
		return err
	}
	// The same without a User-Agent: the gateway hands each visit over as ever, and drops it
	// before any enrichment or stream write (no browser sends none).
	bare := strings.Replace(lua.String(), "wrk.headers[\"User-Agent\"] = \""+benchUserAgent+"\"\n", "", 1)
	if bare == lua.String() {
		return errors.New("wrk script: no User-Agent line to leave out")
	}
	return os.WriteFile(noAgentScript(luaPath), []byte(bare), 0o644)
}

// noAgentScript is the path of luaPath's variant without a User-Agent.
func noAgentScript(luaPath string) string {
	return strings.TrimSuffix(luaPath, ".lua") + "-no-agent.lua"
}

type wrkResult struct {
	rps      float64
	p50, p99 string
	requests int64
}

var (
	rpsLine = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	pctLine = regexp.MustCompile(`^\s+(50|99)%\s+(\S+)`)
	non3xx  = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
	total   = regexp.MustCompile(`(\d+) requests in`)
)

// runWrk runs wrk pinned to the load core and parses throughput and latency percentiles.
func runWrk(ctx context.Context, o options, url, luaPath string, d time.Duration) (wrkResult, error) {
	args := []string{"-c", o.loadCPU, "wrk", "-t1", "-c" + strconv.Itoa(o.conns),
		"-d" + strconv.Itoa(int(d/time.Second)) + "s", "--latency", "-s", luaPath, url}
	out, err := exec.CommandContext(ctx, "taskset", args...).CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	var res wrkResult
	if m := non3xx.FindSubmatch(out); m != nil {
		return res, fmt.Errorf("wrk against %s saw %s error responses", url, m[1])
	}
	m := rpsLine.FindSubmatch(out)
	if m == nil {
		return res, fmt.Errorf("no throughput in wrk output: %s", out)
	}
	res.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	if m := total.FindSubmatch(out); m != nil {
		res.requests, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := pctLine.FindStringSubmatch(sc.Text()); m != nil {
			if m[1] == "50" {
				res.p50 = m[2]
			} else {
				res.p99 = m[2]
			}
		}
	}
	return res, nil
}
