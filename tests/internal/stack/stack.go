// Package stack starts linkmesh's datastores (Redis, and FerretDB on
// PostgreSQL as the MongoDB wire-protocol server) and its six services as real
// local processes, for integration tests and for the one-machine runner
// (tests/cmd/devstack).
//
// Everything listens on 127.0.0.1 only. Child processes run in their own
// process group, so a terminal Ctrl-C reaches only the Go process, which then
// stops them in order; on Linux they also get SIGTERM if the Go process dies.
package stack

import (
	"fmt"
	"net"
	"os"

	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// installHint is appended to errors about missing system binaries.
const installHint = "run deploy/local/install-deps.sh to install local dependencies"

// FromEnv returns the datastores named by LINKMESH_TEST_MONGODB_URI and
// LINKMESH_TEST_REDIS_URL (set by `devstack exec`), or ok=false if either is
// unset, so tests can reuse one shared set of datastores instead of starting
// their own.
func FromEnv() (mongoURI, redisURL string, ok bool) {
	mongoURI = os.Getenv(testenv.EnvMongoURI)
	redisURL = os.Getenv(testenv.EnvRedisURL)
	if mongoURI == "" || redisURL == "" {
		return "", "", false
	}
	return mongoURI, redisURL, true
}

// freePort returns a loopback TCP port that was free a moment ago. Another
// process may take it before our child binds it; starters retry on
// "address already in use" to cover that race.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	return port, nil
}

// addrFree reports whether addr (host:port) can be bound right now. It guards
// fixed ports: a leftover process answering /readyz there would otherwise look
// like our freshly started service.
func addrFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("address %s is not available: %w", addr, err)
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("release %s: %w", addr, err)
	}
	return nil
}
