package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// processSpec describes a child process to start.
type processSpec struct {
	name string   // short name used in errors, e.g. "redis"
	path string   // binary
	args []string // arguments after the binary
	env  []string // nil inherits our environment
	dir  string   // working directory; "" keeps ours
	// logPath receives stdout and stderr (appended); "" sends both to os.Stderr.
	logPath string
	// cred runs the child as another OS user; nil keeps ours.
	cred *syscall.Credential
}

// process is a started child. Its exit is observed by one goroutine so that
// stop and exited never race on cmd.Wait.
type process struct {
	name      string
	logPath   string
	logOffset int64 // log size before this start, so tails show only this run
	cmd       *exec.Cmd
	done      chan struct{} // closed after cmd.Wait returns
	waitErr   error         // valid after done is closed
}

// startProcess starts spec with output redirected to its log file.
func startProcess(spec processSpec) (*process, error) {
	p := &process{name: spec.name, logPath: spec.logPath, done: make(chan struct{})}
	out := os.Stderr
	if spec.logPath != "" {
		f, err := os.OpenFile(spec.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open %s log: %w", spec.name, err)
		}
		// The child gets its own copy of the descriptor, so ours can be closed
		// once it has started.
		defer f.Close()
		if fi, err := f.Stat(); err == nil {
			p.logOffset = fi.Size()
		}
		out = f
	}
	cmd := exec.Command(spec.path, spec.args...)
	cmd.Env = spec.env
	cmd.Dir = spec.dir
	// *os.File outputs are passed to the child directly, with no copying
	// goroutine that could block Wait.
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr(spec.cred)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.name, err)
	}
	p.cmd = cmd
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid returns the child's process ID.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the child has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the child (by PID), waits up to grace for it to exit,
// then kills it. It returns after the child has been reaped.
func (p *process) stop(sig syscall.Signal, grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	// os.Process.Signal refuses to signal a reaped PID, so a recycled PID
	// can never be hit.
	_ = p.cmd.Process.Signal(sig)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return
	case <-timer.C:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// exitError describes how the child ended, for error messages.
func (p *process) exitError() error {
	if p.waitErr != nil {
		return p.waitErr
	}
	return errors.New("exited with status 0")
}

// tail returns up to the last n bytes the child logged since it started, or a
// pointer to stderr when it logs there.
func (p *process) tail(n int64) string {
	if p.logPath == "" {
		return "(output went to stderr)"
	}
	return logTail(p.logPath, p.logOffset, n)
}

// logTail returns the last n bytes of path after offset, trimmed, starting at
// a line boundary where possible.
func logTail(path string, offset, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	start := max(offset, fi.Size()-n)
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	s := string(b)
	if start > offset {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "(log is empty)"
	}
	return s
}

// withTail formats a start failure with the child's recent log output, which
// is usually where the real reason is.
func (p *process) withTail(err error) error {
	where := p.logPath
	if where == "" {
		where = "stderr"
	}
	return fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, where, p.tail(4096))
}

// waitReady polls check until it succeeds, the child exits, ctx ends or
// timeout passes. Polling starts fast and backs off so quick starters are
// noticed quickly without busy-looping on slow ones.
func waitReady(ctx context.Context, p *process, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	interval := 20 * time.Millisecond
	var lastErr error
	for {
		checkCtx, checkCancel := context.WithTimeout(ctx, 2*time.Second)
		lastErr = check(checkCtx)
		checkCancel()
		if lastErr == nil {
			return nil
		}
		timer := time.NewTimer(interval)
		select {
		case <-p.done:
			timer.Stop()
			return p.withTail(fmt.Errorf("%s (pid %d) exited before becoming ready: %w", p.name, p.pid(), p.exitError()))
		case <-ctx.Done():
			timer.Stop()
			return p.withTail(fmt.Errorf("%s (pid %d) not ready: %w (last check: %v)", p.name, p.pid(), ctx.Err(), lastErr))
		case <-timer.C:
		}
		interval = min(interval*2, 250*time.Millisecond)
	}
}

// addrInUse reports whether a failed start was caused by a port taken
// between freePort and the child's bind, which is worth a retry.
func (p *process) addrInUse() bool {
	return p.logPath != "" && strings.Contains(strings.ToLower(p.tail(8192)), "address already in use")
}
