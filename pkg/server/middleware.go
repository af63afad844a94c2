package server

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// HeaderRequestID carries the request id in both directions.
const HeaderRequestID = "X-Request-Id"

// RequestID echoes a client's sane X-Request-Id or assigns a new one. Fiber's own middleware
// echoes any value, including header-injection garbage, so we check it here. It runs on the
// redirect path, so it does not allocate.
func RequestID() fiber.Handler {
	ids := newRequestIDs()
	return func(c *fiber.Ctx) error {
		if id := c.Get(HeaderRequestID); saneRequestID(id) {
			c.Set(HeaderRequestID, id) // the response header keeps its own copy
		} else {
			var buf [48]byte
			c.Response().Header.SetBytesV(HeaderRequestID, ids.append(buf[:0]))
		}
		return c.Next()
	}
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		ch := id[i]
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' ||
			ch == '-' || ch == '_' || ch == '.' || ch == ':'
		if !ok {
			return false
		}
	}
	return true
}

// requestIDs are a random per-process prefix and a counter: unique across replicas without
// paying for the random source on every request.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &requestIDs{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (g *requestIDs) append(b []byte) []byte {
	return strconv.AppendUint(append(b, g.prefix...), g.n.Add(1), 36)
}

// withRequestID makes sure failures raised before the middleware ran (413, 431) still carry
// a request id.
func withRequestID(h fiber.ErrorHandler) fiber.ErrorHandler {
	ids := newRequestIDs()
	return func(c *fiber.Ctx, err error) error {
		if len(c.Response().Header.Peek(HeaderRequestID)) == 0 {
			var buf [48]byte
			c.Response().Header.SetBytesV(HeaderRequestID, ids.append(buf[:0]))
		}
		return h(c, err)
	}
}

// knownMethodsOnly answers methods outside HTTP's standard set with the 405 envelope.
func knownMethodsOnly(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	ids := newRequestIDs()
	return func(ctx *fasthttp.RequestCtx) {
		switch string(ctx.Method()) {
		case fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete,
			fiber.MethodPatch, fiber.MethodOptions, fiber.MethodConnect, fiber.MethodTrace:
			next(ctx)
			return
		}
		var buf [48]byte
		ctx.Response.Header.SetBytesV(HeaderRequestID, ids.append(buf[:0]))
		ctx.SetStatusCode(fiber.StatusMethodNotAllowed)
		ctx.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
		ctx.SetBodyString(`{"error":"method not allowed"}`)
	}
}
