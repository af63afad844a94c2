// Command analytics runs the analytics service: privacy-preserving click analytics. It owns
// its MongoDB database and, until its routes are built, serves only its health probes.
package main

import (
	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
)

func main() { service.Main(service.Spec{Name: config.Analytics, Config: &service.Datastore{}}) }
