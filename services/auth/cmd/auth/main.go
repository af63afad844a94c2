// Command auth runs the auth service: accounts, sessions and roles. It owns its MongoDB
// database and, until its routes are built, serves only its health probes.
package main

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/service"
)

func main() {
	service.Main("auth", func(ctx context.Context, rt service.Runtime) error {
		return service.ServeProbes(ctx, rt, "auth", "127.0.0.1:8081")
	})
}
