package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// execWithDatastores is `devstack exec`: datastores up, run the command with
// their addresses in its environment, datastores down, exit with its status.
func execWithDatastores(ctx context.Context, args []string, logger *slog.Logger) (err error) {
	fs := flag.NewFlagSet("devstack exec", flag.ContinueOnError)
	data := fs.String("data", "", "data directory (default: a fresh temporary directory, removed afterwards)")
	if err := fs.Parse(args); err != nil {
		return &exitCodeError{code: 2}
	}
	if fs.NArg() == 0 {
		return errors.New("devstack exec: no command given (usage: devstack exec [-data DIR] -- cmd args...)")
	}

	dir := *data
	if dir == "" {
		tmp, err := os.MkdirTemp("", "linkmesh-devstack-*")
		if err != nil {
			return fmt.Errorf("create temp data dir: %w", err)
		}
		defer func() {
			if rmErr := os.RemoveAll(tmp); rmErr != nil && err == nil {
				err = fmt.Errorf("remove temp data dir: %w", rmErr)
			}
		}()
		dir = tmp
	}

	// Subscribe before starting anything, so a signal during start-up
	// cancels it instead of killing us with datastores left running.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ds, err := startInterruptible(ctx, dir, logger, sigs)
	if err != nil {
		return err
	}
	defer ds.Stop()

	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Env = append(os.Environ(),
		testenv.EnvMongoURI+"="+ds.MongoURI,
		testenv.EnvRedisURL+"="+ds.RedisURL,
	)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", fs.Arg(0), err)
	}
	return waitChild(cmd, sigs)
}

// startInterruptible starts the datastores, cancelling start-up if a signal
// arrives on sigs. It stops watching sigs before returning, so the caller can
// forward later signals to the child.
func startInterruptible(ctx context.Context, dir string, logger *slog.Logger, sigs <-chan os.Signal) (*stack.Datastores, error) {
	ctx, cancel := context.WithCancel(ctx)
	interrupted := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		select {
		case <-sigs:
			close(interrupted)
			cancel()
		case <-ctx.Done():
		}
	}()
	ds, err := stack.StartDatastores(ctx, dir, logger)
	cancel()
	<-watching
	select {
	case <-interrupted:
		ds.Stop()
		logger.Info("interrupted during start-up")
		return nil, &exitCodeError{code: 130}
	default:
	}
	if err != nil {
		return nil, fmt.Errorf("start datastores: %w", err)
	}
	return ds, nil
}

// waitChild waits for cmd, forwarding SIGINT/SIGTERM to it by PID (the child
// stays in our process group, so a terminal Ctrl-C also reaches it directly;
// forwarding covers signals sent to devstack alone, e.g. by a CI runner).
// Our own stop then happens after the child has exited.
func waitChild(cmd *exec.Cmd, sigs <-chan os.Signal) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			return childExit(err)
		}
	}
}

// childExit converts the child's wait result into our exit status: its exit
// code, or 128+signal if a signal killed it (the shell convention).
func childExit(err error) error {
	if err == nil {
		return nil
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return fmt.Errorf("wait for command: %w", err)
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &exitCodeError{code: 128 + int(ws.Signal())}
	}
	return &exitCodeError{code: exitErr.ExitCode()}
}
