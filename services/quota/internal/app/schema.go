package app

import (
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/quota/internal/store"
)

// Schema is the quota database's: its indexes (no data step yet).
var Schema = &service.Schema{Version: 0, Migrate: store.Prepare}
