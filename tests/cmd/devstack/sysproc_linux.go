package main

import "syscall"

// childSysProcAttr keeps the command in our process group (so terminal job
// control and Ctrl-C work as usual) but has the kernel SIGTERM it if devstack
// is killed, since its datastores die with devstack anyway.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
