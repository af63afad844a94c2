// Command moderation runs the moderation service: abuse reports, permanent-link requests and the audit log. It owns its MongoDB
// database and, until its routes are built, serves only its health probes.
package main

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/service"
)

func main() {
	service.Main("moderation", func(ctx context.Context, rt service.Runtime) error {
		return service.ServeProbes(ctx, rt, "moderation", "127.0.0.1:8084")
	})
}
