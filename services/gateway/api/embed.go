// Package api holds the OpenAPI document of linkmesh's public REST API, embedded so the
// gateway serves exactly the bytes that are reviewed and tested.
package api

import _ "embed"

// OpenAPI is openapi.yaml, the OpenAPI 3.1 description of every public route.
//
//go:embed openapi.yaml
var OpenAPI []byte
