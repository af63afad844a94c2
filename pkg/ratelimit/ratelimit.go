// Package ratelimit writes and reads the RateLimit-Policy and RateLimit header fields of
// draft-ietf-httpapi-ratelimit-headers: each names a quota policy ("token", "create") with
// its size (q units per w seconds) and the caller's state of it (r units left, t seconds
// until a unit frees up). Several policies share one field as a comma-separated list.
package ratelimit

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Header field names.
const (
	HeaderPolicy = "RateLimit-Policy"
	HeaderState  = "RateLimit"
)

// Window is one policy and the caller's place in it.
type Window struct {
	// Name is the policy's name, a token of [a-z0-9_-] (quoted in the fields).
	Name string `json:"name"`
	// Limit is q: how many units the window holds.
	Limit int `json:"limit"`
	// WindowSeconds is w: the window's length.
	WindowSeconds int `json:"window_seconds"`
	// Remaining is r: the units left now.
	Remaining int `json:"remaining"`
	// ResetSeconds is t: how long until a unit frees up (0 when none is taken).
	ResetSeconds int `json:"reset_seconds"`
}

// Policy is the window's RateLimit-Policy list member.
func (w Window) Policy() string {
	return strconv.Quote(w.Name) + ";q=" + strconv.Itoa(max(w.Limit, 0)) + ";w=" + strconv.Itoa(max(w.WindowSeconds, 0))
}

// State is the window's RateLimit list member.
func (w Window) State() string {
	return strconv.Quote(w.Name) + ";r=" + strconv.Itoa(max(w.Remaining, 0)) + ";t=" + strconv.Itoa(max(w.ResetSeconds, 0))
}

// Set adds ws to the response's fields, after any policy already there.
func Set(c *fiber.Ctx, ws ...Window) {
	for _, w := range ws {
		if w.Name == "" {
			continue
		}
		appendField(c, HeaderPolicy, w.Policy())
		appendField(c, HeaderState, w.State())
	}
}

// appendField appends v to the list in field; fiber's Append would drop a member equal to
// one already there, which two windows of one name and size are not meant to be.
func appendField(c *fiber.Ctx, field, v string) {
	if old := c.GetRespHeader(field); old != "" {
		v = old + ", " + v
	}
	c.Set(field, v)
}

// Parse reads the windows that a pair of fields describes; members it cannot read, and
// states without a policy, are skipped. It reads what Set writes, for a client of a peer
// that passes its windows on.
func Parse(policy, state string) []Window {
	var out []Window
	index := map[string]int{}
	for _, m := range splitList(policy) {
		name, params, ok := member(m)
		if !ok {
			continue
		}
		index[name] = len(out)
		out = append(out, Window{Name: name, Limit: params["q"], WindowSeconds: params["w"]})
	}
	for _, m := range splitList(state) {
		name, params, ok := member(m)
		i, known := index[name]
		if !ok || !known {
			continue
		}
		out[i].Remaining, out[i].ResetSeconds = params["r"], params["t"]
	}
	return out
}

func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// member reads `"name";k=v;k=v` with non-negative integer values.
func member(m string) (string, map[string]int, bool) {
	parts := strings.Split(strings.TrimSpace(m), ";")
	name, err := strconv.Unquote(parts[0])
	if err != nil || name == "" {
		return "", nil, false
	}
	params := map[string]int{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return "", nil, false
		}
		params[k] = n
	}
	return name, params, true
}
