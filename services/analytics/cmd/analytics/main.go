// Command analytics runs the analytics service: privacy-preserving click analytics. It owns its MongoDB
// database and, until its routes are built, serves only its health probes.
package main

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/service"
)

func main() {
	service.Main("analytics", func(ctx context.Context, rt service.Runtime) error {
		return service.ServeProbes(ctx, rt, "analytics", "127.0.0.1:8083")
	})
}
