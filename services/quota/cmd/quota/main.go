// Command quota runs the quota service: sliding-window counters behind internal routes.
package main

import (
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/quota/internal/app"
	"github.com/linkmesh/linkmesh/services/quota/internal/config"
)

func main() {
	spec := service.For(pkgconfig.Quota, &config.Config{}, app.Wire)
	spec.Schema = app.Schema
	service.Main(spec)
}
