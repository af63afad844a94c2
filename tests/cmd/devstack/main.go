// Command devstack runs linkmesh on one machine without containers.
//
//	devstack run [-data DIR] [-bin DIR] [-logs DIR]
//
// starts Redis, PostgreSQL with an embedded FerretDB and the six services
// (the command behind `make run`) and stops them all on SIGINT/SIGTERM.
//
//	devstack exec [-data DIR] -- cmd args...
//
// starts only the datastores, runs cmd with LINKMESH_TEST_MONGODB_URI and
// LINKMESH_TEST_REDIS_URL set, stops the datastores and exits with cmd's
// exit code (the wrapper behind `make test`).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// exitCodeError carries a specific process exit code up to main, so exec can
// mirror its child's status without calling os.Exit deep in the code.
type exitCodeError struct{ code int }

// Error implements error.
func (e *exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	err := run(context.Background(), os.Args[1:], logger)
	var exit *exitCodeError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		os.Exit(exit.code)
	default:
		// Printed plainly, not through slog, because start-up errors carry
		// multi-line log tails that a structured handler would escape.
		fmt.Fprintf(os.Stderr, "devstack: %v\n", err)
		os.Exit(1)
	}
}

// run dispatches to a subcommand.
func run(ctx context.Context, args []string, logger *slog.Logger) error {
	if len(args) == 0 {
		usage()
		return &exitCodeError{code: 2}
	}
	switch args[0] {
	case "run":
		return runStack(ctx, args[1:], logger)
	case "exec":
		return execWithDatastores(ctx, args[1:], logger)
	case "-h", "-help", "--help", "help":
		usage()
		return nil
	default:
		fmt.Fprintf(os.Stderr, "devstack: unknown command %q\n", args[0])
		usage()
		return &exitCodeError{code: 2}
	}
}

// usage prints the command summary.
func usage() {
	fmt.Fprint(os.Stderr, `usage:
  devstack run  [-data DIR] [-bin DIR] [-logs DIR]   run datastores and all services until Ctrl-C
  devstack exec [-data DIR] -- cmd args...           run cmd with test datastores

environment (run):
  LINKMESH_MONGODB_URI, LINKMESH_REDIS_URL   use these external datastores instead of starting them
  LINKMESH_GATEWAY_ADDR                      gateway listen address (default 127.0.0.1:8080)
  LINKMESH_IDENTITY_SECRET                   keys client identities (default: generated once into DIR/secrets.env);
  LINKMESH_WEBHOOK_KEY                       seals the webhooks' signing secrets (default: generated once there too);
  LINKMESH_SMTP_URL                          the mail server (default: an embedded one whose web view is printed);
                                             the services' internal keys are generated afresh by every run
`)
}
