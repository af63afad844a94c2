//go:build !linux

package main

import "syscall"

// childSysProcAttr has no parent-death signal outside Linux; the command
// simply keeps running if devstack is killed.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
