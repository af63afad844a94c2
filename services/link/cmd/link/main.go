// Command link runs the link service: creation, resolution and public information of links.
package main

import (
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/link/internal/app"
	"github.com/linkmesh/linkmesh/services/link/internal/config"
)

func main() {
	spec := service.For(pkgconfig.Link, &config.Config{}, app.Wire)
	spec.Schema = app.Schema
	service.Main(spec)
}
