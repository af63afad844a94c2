// Command fakeservice stands in for a linkmesh service in stack's tests: it
// serves /readyz on LINKMESH_LISTEN_ADDR and echoes its environment at /env.
// FAKE_FAIL makes it exit at start with that message, to test failure paths.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run serves until SIGTERM; `fakeservice migrate` has nothing to migrate and exits.
func run(ctx context.Context) error {
	if len(os.Args) > 1 && os.Args[1] == "migrate" {
		return nil
	}
	if msg := os.Getenv("FAKE_FAIL"); msg != "" {
		return errors.New(msg)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /env", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(os.Environ())
	})
	srv := &http.Server{Addr: os.Getenv("LINKMESH_LISTEN_ADDR"), Handler: mux}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	fmt.Printf(`{"msg":"listening","addr":%q}`+"\n", srv.Addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	// Tests look for this line to know the service was stopped gracefully.
	fmt.Println(`{"msg":"stopped"}`)
	return nil
}
