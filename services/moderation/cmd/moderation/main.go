// Command moderation runs the moderation service: the permanent-link request queue and the
// audit trail of moderators' actions (reports arrive with the moderation features).
package main

import (
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/moderation/internal/app"
	"github.com/linkmesh/linkmesh/services/moderation/internal/config"
)

func main() {
	spec := service.For(pkgconfig.Moderation, &config.Config{}, app.Wire)
	spec.Schema = app.Schema
	service.Main(spec)
}
