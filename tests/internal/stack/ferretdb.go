package stack

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/FerretDB/FerretDB/v2/ferretdb"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ferretStopTimeout bounds FerretDB's shutdown, which gives connected
// clients a few seconds to disconnect.
const ferretStopTimeout = 15 * time.Second

// ferretServer is FerretDB v2 embedded in our process, serving the MongoDB wire protocol
// over PostgreSQL with the DocumentDB extension, which runs every query and update inside
// PostgreSQL. Embedding avoids a separate binary and a process to manage.
type ferretServer struct {
	uri     string
	cancel  context.CancelFunc
	done    chan struct{} // closed when Run returns
	logFile *os.File
}

// startFerretDB starts FerretDB on addr (a free loopback port when empty) against pgURL
// and waits until a MongoDB ping succeeds. Its logs go to logsDir/ferretdb.log, its state
// file to dir/ferretdb.
func startFerretDB(ctx context.Context, pgURL, dir, logsDir, addr string) (*ferretServer, error) {
	if addr == "" {
		addr = "127.0.0.1:0" // the kernel picks: FerretDB binds in New, so no race
	}
	logPath := filepath.Join(logsDir, "ferretdb.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start ferretdb: open log: %w", err)
	}
	var offset int64
	if fi, err := logFile.Stat(); err == nil {
		offset = fi.Size()
	}
	stateDir := filepath.Join(dir, "ferretdb")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start ferretdb: %w", err)
	}
	telemetry := false // nothing leaves the machine
	f, err := ferretdb.New(&ferretdb.Config{
		PostgreSQLURL: pgURL,
		ListenAddr:    addr,
		StateDir:      stateDir,
		LogLevel:      slog.LevelWarn,
		LogOutput:     logFile,
		Telemetry:     &telemetry,
	})
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start ferretdb: %w\n--- last lines of %s ---\n%s", err, logPath, logTail(logPath, offset, 4096))
	}
	// The server must outlive ctx, which only bounds startup; stop ends it.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &ferretServer{cancel: cancel, done: make(chan struct{}), logFile: logFile}
	go func() {
		defer close(s.done)
		f.Run(runCtx)
	}()
	s.uri = f.MongoDBURI()

	readyCtx, readyCancel := context.WithTimeout(ctx, 30*time.Second)
	defer readyCancel()
	if err := pingMongo(readyCtx, s.uri); err != nil {
		s.stop()
		return nil, fmt.Errorf("start ferretdb: %w\n--- last lines of %s ---\n%s", err, logPath, logTail(logPath, offset, 4096))
	}
	return s, nil
}

// pingMongo connects to uri and pings until it answers or ctx ends. Ping
// goes through FerretDB to PostgreSQL, so success means the whole chain works.
func pingMongo(ctx context.Context, uri string) error {
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(2 * time.Second))
	if err != nil {
		return fmt.Errorf("connect mongo: %w", err)
	}
	defer client.Disconnect(context.WithoutCancel(ctx))
	for {
		err := client.Ping(ctx, nil)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ping mongo at %s: %w", uri, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends FerretDB and waits for it, bounded so a stuck client connection
// cannot hang shutdown.
func (s *ferretServer) stop() {
	if s == nil {
		return
	}
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(ferretStopTimeout):
	}
	s.logFile.Close()
}
