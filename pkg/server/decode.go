package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// DecodeJSON decodes the request body into v. Unknown fields are ignored; an empty body, a
// body that is not one JSON value, or a field of the wrong type is a 400 naming the problem.
//
// It reads the raw body: Fiber's Body() would inflate a Content-Encoding without any bound,
// turning a few kilobytes of gzip into gigabytes past the 64 KiB limit. Compressed request
// bodies are refused instead.
func DecodeJSON(c *fiber.Ctx, v any) error {
	if enc := c.Get(fiber.HeaderContentEncoding); enc != "" && !strings.EqualFold(enc, "identity") {
		return errs.E(errs.KindUnsupportedMedia, "Content-Encoding %s is not supported", strings.ToLower(enc))
	}
	return decodeBody(c.Request().Body(), v)
}

// DecodeOptionalJSON is DecodeJSON for a body whose every field is optional: an empty body
// reads as {} and leaves v as it is.
func DecodeOptionalJSON(c *fiber.Ctx, v any) error {
	if len(bytes.TrimSpace(c.Request().Body())) == 0 {
		return nil
	}
	return DecodeJSON(c, v)
}

func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errs.Invalid("request body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errs.Invalid("request body must be a single JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return &errs.Error{Kind: errs.KindInvalid, Err: err,
			Message: fmt.Sprintf("%s must be %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))}
	case errors.As(err, &typeErr):
		return &errs.Error{Kind: errs.KindInvalid, Message: "request body must be a JSON object", Err: err}
	default:
		return &errs.Error{Kind: errs.KindInvalid, Message: "request body is not valid JSON", Err: err}
	}
}

// jsonKind names a Go kind in JSON terms for error messages.
func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	default:
		return "an object"
	}
}
