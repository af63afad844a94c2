// Command moderation runs the moderation service: abuse reports, permanent-link requests and
// the audit log. It owns its MongoDB database and, until its routes are built, serves only
// its health probes.
package main

import (
	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
)

func main() { service.Main(service.Spec{Name: config.Moderation, Config: &service.Datastore{}}) }
