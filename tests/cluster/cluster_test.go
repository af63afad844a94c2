// Package cluster runs linkmesh against a real three-node Redis Cluster: the quota windows
// (Lua scripts over several keys), the redirect cache invalidation (pub/sub) and the clicks
// stream (consumer group, dead-letter transaction) must all work when keys live on different
// nodes.
package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

var (
	svcs    *stack.Services
	cluster *stack.RedisCluster
	client  = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	mongoURI, _, ok := stack.FromEnv()
	if !ok {
		if os.Getenv("LINKMESH_REQUIRE_INTEGRATION") != "" {
			fmt.Fprintln(os.Stderr, "cluster: LINKMESH_TEST_MONGODB_URI is not set; run `make test`")
			return 1
		}
		fmt.Println("cluster: no datastores configured; skipped (run `make test`)")
		return 0
	}
	bin := os.Getenv("LINKMESH_BIN_DIR")
	dir, err := os.MkdirTemp("", "linkmesh-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if cluster, err = stack.StartRedisCluster(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		return 1
	}
	defer cluster.Stop()
	svcs, err = stack.StartServices(ctx, stack.ServicesOptions{
		BinDir: bin, MongoURI: mongoURI, RedisURL: cluster.URL, DatabasePrefix: testenv.Name("cluster"),
		LogDir: dir, GatewayReplicas: 1,
		// What is tested is Redis Cluster: accounts create links without a mail to open.
		Env: map[string]string{"LINKMESH_TRUSTED_PROXIES": "127.0.0.1/32", "LINKMESH_ANON_QUOTA": "10", "LINKMESH_EMAIL_VERIFICATION": "off"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster: start services:", err)
		return 1
	}
	code := m.Run()
	svcs.Stop()
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "cluster: logs are in", dir)
	}
	return code
}

func send(t *testing.T, base, method, path, body string, header map[string]string) stack.Answer {
	t.Helper()
	a, err := stack.Send(client, base, method, path, body, header)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return a
}

// The keys of one counter share a hash tag, so the reserve script runs on one node and stays
// exact: 30 concurrent creations against a quota of 10 make exactly 10 links.
func TestQuotaWindowIsExactOnACluster(t *testing.T) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range 30 {
		wg.Go(func() {
			a := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/q%d"}`, i),
				map[string]string{"X-Forwarded-For": "203.0.113.77"})
			mu.Lock()
			statuses[a.Status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[201] != 10 || statuses[429] != 20 {
		t.Fatalf("30 concurrent creations against a quota of 10 answered %v", statuses)
	}
}

// A change published by the link service reaches both gateways' caches through the
// cluster's pub/sub, and visits become clicks through the clicks stream and its group.
func TestInvalidationAndClicksOnACluster(t *testing.T) {
	reg := send(t, svcs.GatewayURL, "POST", "/api/auth/register",
		`{"email":"owner@cluster.example","password":"s3cret-passphrase","first_name":"Ada","last_name":"Lovelace"}`,
		map[string]string{"X-Forwarded-For": "203.0.113.78"})
	if reg.Status != 201 {
		t.Fatalf("register: %d %s", reg.Status, reg.Body)
	}
	cookie := ""
	for _, c := range (&http.Response{Header: reg.Header}).Cookies() {
		if c.Name == "go_session" {
			cookie = c.Name + "=" + c.Value
		}
	}
	owner := map[string]string{"Cookie": cookie, "X-Forwarded-For": "203.0.113.78"}
	created := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/cluster"}`, owner)
	if created.Status != 201 {
		t.Fatalf("shorten: %d %s", created.Status, created.Body)
	}
	var link struct {
		Code string `json:"short_code"`
	}
	_ = json.Unmarshal(created.Body, &link)

	const visits = 20
	browser := map[string]string{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"}
	gateways := []string{svcs.GatewayURL, svcs.URLs["gateway-2"]}
	for i := range visits {
		browser["X-Forwarded-For"] = fmt.Sprintf("198.51.100.%d", i+1)
		if a := send(t, gateways[i%2], "GET", "/"+link.Code, "", browser); a.Status != 302 {
			t.Fatalf("visit %d: %d %s", i, a.Status, a.Body)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		// Today and yesterday (UTC): the visits may fall either side of midnight.
		a := send(t, svcs.GatewayURL, "GET", "/api/user/links/"+link.Code+"/analytics?days=2", "", owner)
		var got struct {
			Total int `json:"total_clicks"`
		}
		_ = json.Unmarshal(a.Body, &got)
		if a.Status == 200 && got.Total == visits {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s the analytics answer %d %s, want %d clicks", a.Status, a.Body, visits)
		}
		time.Sleep(500 * time.Millisecond)
	}

	if a := send(t, svcs.GatewayURL, "DELETE", "/api/user/links/"+link.Code, "", owner); a.Status != 200 && a.Status != 204 {
		t.Fatalf("delete: %d %s", a.Status, a.Body)
	}
	start := time.Now()
	for _, gw := range gateways {
		for {
			a := send(t, gw, "GET", "/"+link.Code, "", nil)
			if a.Status == 404 {
				break
			}
			if time.Since(start) > time.Second {
				t.Fatalf("%s still answers %d for a deleted code after 1 s", gw, a.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// The worker's dead-letter step writes the dead stream and acknowledges in one
// transaction: on a cluster both streams must share a slot, or the step fails CROSSSLOT and
// the poison entry is retried forever.
func TestPoisonEntryIsDeadLetteredOnACluster(t *testing.T) {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := testenv.Name("poison")
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: name, Values: map[string]any{"k": "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	w, err := stream.NewWorker(stream.WorkerOptions{Client: rdb, Stream: name, Group: "g", MaxDeliveries: 2,
		Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Block: 100 * time.Millisecond,
		Handler: func(context.Context, []stream.Message) error { return fmt.Errorf("always fails") }})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(wctx) }()
	defer func() { stop(); <-done }()
	for w.Stats().DeadLettered == 0 {
		if ctx.Err() != nil {
			t.Fatalf("the poison entry was never dead-lettered: %+v", w.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, err := rdb.XLen(ctx, stream.DeadStream(name)).Result(); err != nil || n != 1 {
		t.Fatalf("dead-letter stream holds %d (%v), want 1", n, err)
	}
	if p, err := rdb.XPending(ctx, name, "g").Result(); err != nil || p.Count != 0 {
		t.Fatalf("the entry is still pending: %+v %v", p, err)
	}
}
