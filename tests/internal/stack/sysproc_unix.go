//go:build unix && !linux

package stack

import "syscall"

// sysProcAttr puts the child in its own process group, so a terminal Ctrl-C
// reaches only us and we can stop children in order. Outside Linux there is
// no parent-death signal, so children of a killed runner must be stopped by hand.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:    true,
		Credential: cred,
	}
}
