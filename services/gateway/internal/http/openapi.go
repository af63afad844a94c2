package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/services/gateway/api"
)

// openAPIContentType is YAML's registered media type (RFC 9512); it is always UTF-8, so it
// takes no charset.
const openAPIContentType = "application/yaml"

// serveOpenAPI answers the OpenAPI document embedded in the binary, so what clients read is
// exactly what the route tests checked against the routes.
func serveOpenAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, openAPIContentType)
	return c.Send(api.OpenAPI)
}
