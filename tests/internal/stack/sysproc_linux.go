package stack

import "syscall"

// sysProcAttr puts the child in its own process group, so a terminal Ctrl-C
// reaches only us and we can stop children in order, and asks the kernel to
// SIGTERM it if we die, so children never outlive a killed runner.
// Pdeathsig is applied after the credential change, so it survives cred.
// The kernel ties it to the forking OS thread, which the Go runtime keeps
// alive (it only retires threads of goroutines that exit while locked).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGTERM,
		Credential: cred,
	}
}
