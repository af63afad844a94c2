package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
)

// serveBaseline is the reference: a bare Fiber handler answering 302 from a map.
func serveBaseline(ctx context.Context, addr, codesPath string) error {
	f, err := os.Open(codesPath)
	if err != nil {
		return err
	}
	dest := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if code, d, ok := strings.Cut(sc.Text(), "\t"); ok {
			dest[code] = d
		}
	}
	f.Close()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/:code", func(c *fiber.Ctx) error {
		d, ok := dest[c.Params("code")]
		if !ok {
			return c.SendStatus(fiber.StatusNotFound)
		}
		c.Set(fiber.HeaderLocation, d)
		return c.SendStatus(fiber.StatusFound)
	})
	go func() { <-ctx.Done(); _ = app.Shutdown() }()
	return app.Listen(addr)
}

type baselineProc struct {
	url string
	cmd *exec.Cmd
}

// startBaseline runs this binary as the baseline server under the same pinning as the gateway.
func startBaseline(ctx context.Context, pin []string, codesPath string) (*baselineProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, pin[1:]...), self, "-serve-baseline", addr, "-codes", codesPath)
	cmd := exec.Command(pin[0], args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &baselineProc{url: "http://" + addr, cmd: cmd}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(b.url + "/-"); err == nil {
			resp.Body.Close()
			return b, nil
		}
		select {
		case <-ctx.Done():
			b.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	b.stop()
	return nil, fmt.Errorf("baseline did not start on %s", addr)
}

func (b *baselineProc) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	_ = b.cmd.Wait()
}
