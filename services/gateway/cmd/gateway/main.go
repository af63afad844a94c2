// Command gateway runs linkmesh's public entry: the REST API under /api and the redirects.
package main

import (
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/gateway/internal/app"
	"github.com/linkmesh/linkmesh/services/gateway/internal/config"
)

func main() { service.Main(service.For(pkgconfig.Gateway, &config.Config{}, app.Wire)) }
