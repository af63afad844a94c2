package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a three-node Redis Cluster on loopback, each node a master of a third of
// the slots, for tests that must see what a cluster refuses (keys of one script or
// transaction in different slots) and what it routes (pub/sub, streams).
type RedisCluster struct {
	// URL names the cluster as LINKMESH_REDIS_URL does.
	URL   string
	Addrs []string
	procs []*process
}

// StartRedisCluster starts the three nodes in dir (their nodes.conf and logs) and forms the
// cluster with redis-cli; it returns once every node reports cluster_state:ok.
func StartRedisCluster(ctx context.Context, dir string) (_ *RedisCluster, err error) {
	server, err := lookBinary("redis-server")
	if err != nil {
		return nil, err
	}
	cli, err := lookBinary("redis-cli")
	if err != nil {
		return nil, err
	}
	c := &RedisCluster{}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for i := range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", i))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return nil, err
		}
		p, err := startProcess(processSpec{name: "redis-cluster-" + strconv.Itoa(i), path: server, dir: nodeDir,
			logPath: filepath.Join(nodeDir, "redis.log"),
			args: []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf", "--save", "", "--appendonly", "no", "--daemonize", "no"}})
		if err != nil {
			return nil, fmt.Errorf("start cluster node: %w", err)
		}
		c.procs = append(c.procs, p)
		if err := waitReady(ctx, p, redisReadyTimeout, func(ctx context.Context) error {
			return pingRedis(ctx, "redis://"+addr)
		}); err != nil {
			return nil, fmt.Errorf("cluster node %s: %w", addr, err)
		}
		c.Addrs = append(c.Addrs, addr)
	}
	args := append(append([]string{"--cluster", "create"}, c.Addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w: %s", err, out)
	}
	for _, addr := range c.Addrs {
		if err := waitClusterOK(ctx, addr); err != nil {
			return nil, err
		}
	}
	c.URL = "redis+cluster://" + c.Addrs[0] + "?addr=" + strings.Join(c.Addrs[1:], "&addr=")
	return c, nil
}

// waitClusterOK polls a node until it reports cluster_state:ok (≤ 20 s).
func waitClusterOK(ctx context.Context, addr string) error {
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer client.Close()
	deadline := time.Now().Add(redisReadyTimeout)
	for {
		info, err := client.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster node %s never reported cluster_state:ok (%v): %s", addr, err, info)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop kills the nodes; they hold nothing worth a graceful stop.
func (c *RedisCluster) Stop() {
	for _, p := range c.procs {
		p.stop(syscall.SIGKILL, time.Second)
	}
}
