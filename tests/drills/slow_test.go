package drills

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// Deadlines of the two paths through the link service, as the gateway waits for them.
const (
	// createWait: a creation is bounded by link.CreateBudget in the link service, and the
	// gateway waits a second more for its answer (services/gateway/internal/app).
	createWait = link.CreateBudget + time.Second
	// fillWait: a redirect fill keeps the internal client's default deadline, 5 s, retries
	// included (pkg/httpclient).
	fillWait = 5 * time.Second
	// slack is what a loaded two-core machine may add to an answer on top of its deadline.
	slack = time.Second
)

// TestSlowDependency: the link service's MongoDB connections run through a TCP proxy
// (toxiproxy, embedded) that first delays every packet by 300 ms each way, then swallows
// everything the service sends while holding its connections open, then is healthy again.
// Creations and redirect fills of cold codes go through the link service and its MongoDB
// meanwhile, and warm redirects through both gateways.
//
//   - Slow but answering, the database costs time within the deadlines: every creation
//     and fill succeeds, each within its bound.
//   - Swallowing everything, it costs no more than the deadlines: each creation and fill
//     answers 503 in the envelope within its bound — never 500, never a hang — and the
//     service sends the database no more than its retry policies allow.
//   - Healthy again, the service recovers by itself, and what the outage held (goroutines,
//     connections to the database) is given back.
//
// Warm redirects never notice any of it.
func TestSlowDependency(t *testing.T) {
	rep := newReport(t)
	svcs := bench.Services
	gateways := []string{svcs.GatewayURL, svcs.URLs["gateway-2"]}
	_, cookie := signUp(t, "slow-owner@drill.example", "203.0.113.50")
	warm := shorten(t, svcs.GatewayURL, "https://93.184.216.34/slow-warm", cookie)
	for _, gw := range gateways {
		warmUp(t, gw, warm)
	}
	// Codes nobody visited yet, so their first visit asks the link service and its MongoDB.
	var cold []string
	for i := range 12 {
		cold = append(cold, shorten(t, svcs.GatewayURL, fmt.Sprintf("https://93.184.216.34/slow-cold%d", i), cookie))
	}

	db := newToxicProxy(t, hostPort(t, bench.Datastores.MongoURI))
	useMongo(t, "link", "mongodb://"+db.proxy.Listen+"/")
	t.Cleanup(func() { db.proxy.Toxics.ResetToxics(context.Background()) }) // before the service is restarted without it
	stop := follow(t, rep, "warm redirect", warm, gateways, 2, 20*time.Millisecond)
	defer stop()
	metrics := svcs.MetricsURLs["link"]
	timed(t, rep, "before", 0, cookie, cold[0:2])
	goroutines := gauge(t, metrics, "go_goroutines")
	peers := func() int {
		out, in := peerConns(t, svcs.URLs, "link", "quota", "moderation", "analytics")
		return 2*out + in
	}
	peersBefore := peers()
	rep.figure("goroutines before", goroutines)
	rep.figure("connections before", len(db.open(t)))

	// Slow: 300 ms each way.
	db.toxic(t, `{"name":"slow-up","type":"latency","stream":"upstream","attributes":{"latency":300}}`)
	db.toxic(t, `{"name":"slow-down","type":"latency","stream":"downstream","attributes":{"latency":300}}`)
	timed(t, rep, "slow", 0, cookie, cold[2:4])
	db.remove(t, "slow-up", "slow-down")

	// Swallowed: nothing the service sends arrives, its connections stay open.
	sent, opened := db.counter.chunks.Load(), db.counter.conns.Load()
	db.toxic(t, `{"name":"blackhole","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`)
	swallowed := time.Now()
	fills := cold[4:10]
	timed(t, rep, "blackhole", 503, cookie, fills)
	sent, opened = db.counter.chunks.Load()-sent, db.counter.conns.Load()-opened
	held := db.open(t)
	rep.figure("goroutines during the blackhole", gauge(t, metrics, "go_goroutines"))
	rep.figure("connections during the blackhole", len(held))
	db.remove(t, "blackhole")
	rep.down("link's mongodb", time.Since(swallowed))
	// Retries stay bounded. Nothing is answered, so only deadlines end what the service
	// sent, and its policies allow at most: a creation one attempt (a POST is never
	// retried, pkg/httpclient), a fill 1+2 (RetryMax); each attempt one MongoDB operation,
	// which the driver tries at most twice (retryable reads and writes), each try perhaps
	// on a new connection, whose handshake is a message too. Of the service's own: one
	// operation of a sweep (purges are looked for every 30 s), and the driver's heartbeat (every 10 s) with one retry.
	tries := 2 * (creations*1 + int64(len(fills))*3 + 1)
	rep.figure("blackhole messages sent", sent)
	rep.figure("blackhole connections opened", opened)
	if sent > 2*tries+2 || opened > tries+2 {
		t.Errorf("during the blackhole the link service sent %d messages to MongoDB on %d new connections; its retry policies allow %d on %d", sent, opened, 2*tries+2, tries+2)
	}

	// Healthy again, it recovers by itself: within the driver's heartbeat (10 s), by which
	// a server it marked unknown is checked again at the latest.
	back := time.Now()
	for n := 0; ; n++ {
		status, body := rep.send(t, "shorten after the blackhole", svcs.GatewayURL, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/slow-back%d"}`, n), cookie)
		if status == 201 {
			break
		}
		if time.Since(back) > 10*time.Second+slack {
			t.Fatalf("creation still fails %s after the blackhole: %d %s", time.Since(back).Round(time.Millisecond), status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rep.recovered("link's mongodb", time.Since(back))
	after := cold[10:12]
	timed(t, rep, "after", 0, cookie, after)

	// What the blackhole held is given back. Every connection it held is closed. The pool
	// keeps the connections it opened meanwhile for operations that waited (pkg/mongodb
	// sets no idle time), so it holds at most one per operation that wanted one at once —
	// the blackhole's creations and fills and a sweep's — besides the driver's
	// monitor. The goroutines return to what they were before, give or take two, once the
	// server's idle workers have left (fasthttp lets a worker idle for 10 s, and looks for
	// such workers every 10 s), and but for the keep-alive connections opened for the calls
	// the blackhole held at once, which stay open idle for 90 s: two goroutines for each to
	// a peer service (its read and write loops), one for each from a gateway (the worker
	// waiting for its next request).
	settled := time.Now()
	pool := creations + len(fills) + 1 + 1
	for {
		g, open := gauge(t, metrics, "go_goroutines"), db.open(t)
		kept := 0
		for addr := range open {
			if held[addr] {
				kept++
			}
		}
		idle := max(0, peers()-peersBefore)
		if g <= goroutines+2+float64(idle) && kept == 0 && len(open) <= pool {
			rep.figure("goroutines after", g)
			rep.figure("goroutines of keep-alive connections opened meanwhile", idle)
			rep.figure("connections after", len(open))
			break
		}
		if time.Since(settled) > 25*time.Second {
			t.Fatalf("25 s after recovery the link service holds %v goroutines (%v before) and %d connections to MongoDB (at most %d wanted), %d of them from the blackhole", g, goroutines, len(open), pool, kept)
		}
		time.Sleep(500 * time.Millisecond)
	}
	rep.recovered("goroutines and connections", time.Since(settled))
	stop()
	if failed, how := rep.other("warm redirect", 302); failed != 0 {
		t.Errorf("warm redirects failed %d times: %s", failed, how)
	}
}

// creations is how many creations timed sends at once.
const creations = 2

// timed sends, at once, the creations and a first visit to each of the cold codes, and
// checks that each is answered within its deadline: 201 and 302 when want is 0, else
// want, in the envelope.
func timed(t *testing.T, rep *report, phase string, want int, owner map[string]string, cold []string) {
	t.Helper()
	type call struct {
		what, method, path, body string
		header                   map[string]string
		ok                       int
		bound                    time.Duration
	}
	var calls []call
	for i := range creations {
		calls = append(calls, call{"shorten", "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/%s%d"}`, phase, i), owner, 201, createWait})
	}
	for _, code := range cold {
		calls = append(calls, call{"first visit", "GET", "/" + code, "", browser, 302, fillWait})
	}
	var mu sync.Mutex
	slowest := map[string]time.Duration{}
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() {
			if want != 0 {
				c.ok = want
			}
			start := time.Now()
			status, body := rep.send(t, phase+" "+c.what, bench.Services.GatewayURL, c.method, c.path, c.body, c.header)
			took := time.Since(start)
			mu.Lock()
			slowest[c.what] = max(slowest[c.what], took)
			mu.Unlock()
			if status >= 400 {
				rep.figure(phase+" "+c.what+" answer", string(body))
			}
			if status != c.ok || took > c.bound+slack || (status >= 400 && !strings.HasPrefix(string(body), `{"error":"`)) ||
				// Only MongoDB is slowed: an answer blaming Redis misleads whoever is on call.
				strings.Contains(string(body), "redis") {
				t.Errorf("%s: %s %s answered %d %s after %s, want %d within %s", phase, c.method, c.path, status, body, took.Round(time.Millisecond), c.ok, c.bound+slack)
			}
		})
	}
	wg.Wait()
	for what, d := range slowest {
		rep.figure(phase+" "+what+" slowest", d)
	}
}

// toxicProxy is a TCP proxy whose toxics slow or stop what passes; counter sees every
// connection and everything sent upstream through it.
type toxicProxy struct {
	proxy   *toxiproxy.Proxy
	counter *countToxic
}

// newToxicProxy starts a proxy to upstream on a free loopback port, stopped when t ends.
func newToxicProxy(t *testing.T, upstream string) *toxicProxy {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := &toxicProxy{proxy: toxiproxy.NewProxy(server, "drill", "127.0.0.1:0", upstream)}
	if err := p.proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.proxy.Stop)
	p.counter = p.toxic(t, `{"name":"count","type":"count","stream":"upstream"}`).(*countToxic)
	return p
}

// toxic adds the toxic spec describes (toxiproxy's JSON) and returns it.
func (p *toxicProxy) toxic(t *testing.T, spec string) toxics.Toxic {
	t.Helper()
	w, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(spec))
	if err != nil {
		t.Fatalf("add toxic %s: %v", spec, err)
	}
	return w.Toxic
}

// remove takes the named toxics away.
func (p *toxicProxy) remove(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := p.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
			t.Fatalf("remove toxic %s: %v", name, err)
		}
	}
}

// open returns the connections open through the proxy, by their client's address: the
// TCP connections in state ESTABLISHED whose local end is the proxy's listening port.
func (p *toxicProxy) open(t *testing.T) map[string]bool {
	t.Helper()
	_, port, _ := net.SplitHostPort(p.proxy.Listen)
	local, open := hexPort(t, port), map[string]bool{}
	for _, c := range established(t) {
		if strings.HasSuffix(c.local, local) {
			open[c.remote] = true
		}
	}
	return open
}

// tcpConn is an established TCP connection as /proc/net/tcp gives it: hex ip:port ends.
type tcpConn struct{ local, remote string }

// established lists the established TCP connections of the machine (IPv4).
func established(t *testing.T) []tcpConn {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []tcpConn
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		// sl local_address rem_address st …, st 01 ESTABLISHED
		if fields := strings.Fields(lines.Text()); len(fields) > 3 && fields[3] == "01" {
			out = append(out, tcpConn{local: fields[1], remote: fields[2]})
		}
	}
	return out
}

// hexPort is port as /proc/net/tcp ends an address with it.
func hexPort(t *testing.T, port string) string { return fmt.Sprintf(":%04X", mustAtoi(t, port)) }

// countToxic passes everything on and counts the connections it is set up on and the
// chunks of data it passes (one read from the sender each: about one request of a client
// that writes each request at once).
type countToxic struct{ conns, chunks atomic.Int64 }

func init() { toxics.Register("count", new(countToxic)) }

// NewState is called once per connection the toxic is set up on.
func (c *countToxic) NewState() any {
	c.conns.Add(1)
	return nil
}

func (c *countToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case chunk := <-stub.Input:
			if chunk == nil {
				stub.Close()
				return
			}
			c.chunks.Add(1)
			stub.Output <- chunk
		}
	}
}

// useMongo restarts service with its MongoDB at uri, and with the bench's own again when t
// ends.
func useMongo(t *testing.T, service, uri string) {
	t.Helper()
	restart := func(uri string) error {
		bench.Services.StopService(service)
		return bench.Services.RestartServiceWith(context.Background(), service, map[string]string{stack.EnvMongoURI: uri})
	}
	if err := restart(uri); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := restart(bench.Datastores.MongoURI); err != nil {
			t.Error(err)
		}
	})
}

// hostPort is the host:port a datastore URL names.
func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// peerConns counts the link service's established connections to the named services but
// itself (out) and to itself (in), by their ports (during the drill only the link service
// calls those peers, and only the gateways call it).
func peerConns(t *testing.T, urls map[string]string, self string, peers ...string) (out, in int) {
	t.Helper()
	port := func(name string) string {
		u, err := url.Parse(urls[name])
		if err != nil {
			t.Fatal(err)
		}
		return hexPort(t, u.Port())
	}
	own, remote := port(self), map[string]bool{}
	for _, n := range peers {
		remote[port(n)] = true
	}
	for _, c := range established(t) {
		switch {
		case remote[c.remote[max(0, len(c.remote)-5):]]:
			out++
		case strings.HasSuffix(c.local, own):
			in++
		}
	}
	return out, in
}
