// Command auth runs the auth service: accounts, password and identity-provider login,
// sessions, roles and the login audit trail, behind internal routes for the gateway.
package main

import (
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/auth/internal/app"
	"github.com/linkmesh/linkmesh/services/auth/internal/config"
)

func main() {
	spec := service.For(pkgconfig.Auth, &config.Config{}, app.Wire)
	spec.Schema = app.Schema
	service.Main(spec)
}
