// Command analytics runs the analytics service: it stores the clicks the gateways put on
// the clicks stream, without any client address, and answers for them.
package main

import (
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/analytics/internal/app"
	"github.com/linkmesh/linkmesh/services/analytics/internal/config"
)

func main() {
	spec := service.For(pkgconfig.Analytics, &config.Config{}, app.Wire)
	spec.Schema = app.Schema
	service.Main(spec)
}
