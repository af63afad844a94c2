package telemetry

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// validUTF8Exporter hands spans on to the wrapped exporter with every string valid UTF-8.
// Attribute values come from clients (paths, headers, user agents), and protobuf refuses to
// marshal an export request holding one invalid string, which would drop the whole batch.
type validUTF8Exporter struct{ sdktrace.SpanExporter }

// ExportSpans replaces each span holding an invalid string with a copy in which every
// invalid sequence reads U+FFFD. Valid spans, the common case, pass as they are, unallocated.
func (e validUTF8Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	var out []sdktrace.ReadOnlySpan // the batch is the SDK's: copied before the first change
	for i, s := range spans {
		if validSpan(s) {
			continue
		}
		if out == nil {
			out = slices.Clone(spans)
		}
		out[i] = sanitizeSpan(s)
	}
	if out == nil {
		out = spans
	}
	return e.SpanExporter.ExportSpans(ctx, out)
}

func validSpan(s sdktrace.ReadOnlySpan) bool {
	if !utf8.ValidString(s.Name()) || !utf8.ValidString(s.Status().Description) || !validAttrs(s.Attributes()) {
		return false
	}
	for _, ev := range s.Events() {
		if !utf8.ValidString(ev.Name) || !validAttrs(ev.Attributes) {
			return false
		}
	}
	for _, l := range s.Links() {
		if !validAttrs(l.Attributes) {
			return false
		}
	}
	sc := s.InstrumentationScope()
	return validResource(s.Resource()) && utf8.ValidString(sc.Name) && utf8.ValidString(sc.Version) &&
		utf8.ValidString(sc.SchemaURL) && validIter(sc.Attributes.Iter())
}

func validResource(r *resource.Resource) bool {
	return utf8.ValidString(r.SchemaURL()) && validIter(r.Iter())
}

func validIter(it attribute.Iterator) bool {
	for it.Next() {
		if !validKV(it.Attribute()) {
			return false
		}
	}
	return true
}

func validAttrs(kvs []attribute.KeyValue) bool {
	for _, kv := range kvs {
		if !validKV(kv) {
			return false
		}
	}
	return true
}

func validKV(kv attribute.KeyValue) bool {
	return utf8.ValidString(string(kv.Key)) && validValue(kv.Value)
}

func validValue(v attribute.Value) bool {
	switch v.Type() {
	case attribute.STRING:
		return utf8.ValidString(v.AsString())
	case attribute.STRINGSLICE:
		return !slices.ContainsFunc(v.AsStringSlice(), func(s string) bool { return !utf8.ValidString(s) })
	case attribute.SLICE:
		return !slices.ContainsFunc(v.AsSlice(), func(v attribute.Value) bool { return !validValue(v) })
	case attribute.MAP:
		return validAttrs(v.AsMap())
	}
	return true // numbers, and BYTESLICE, which OTLP carries as bytes
}

// sanitizeSpan returns a read-only copy of s with valid strings; what s holds is not modified.
func sanitizeSpan(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	stub := tracetest.SpanStubFromReadOnlySpan(s)
	stub.Name = validString(stub.Name)
	stub.Status.Description = validString(stub.Status.Description)
	stub.Attributes = sanitizeAttrs(stub.Attributes)
	stub.Events = slices.Clone(stub.Events)
	for i, ev := range stub.Events {
		stub.Events[i].Name, stub.Events[i].Attributes = validString(ev.Name), sanitizeAttrs(ev.Attributes)
	}
	stub.Links = slices.Clone(stub.Links)
	for i, l := range stub.Links {
		stub.Links[i].Attributes = sanitizeAttrs(l.Attributes)
	}
	if !validResource(stub.Resource) {
		stub.Resource = resource.NewWithAttributes(validString(stub.Resource.SchemaURL()), sanitizeAttrs(stub.Resource.Attributes())...)
	}
	sc := &stub.InstrumentationScope
	sc.Name, sc.Version, sc.SchemaURL = validString(sc.Name), validString(sc.Version), validString(sc.SchemaURL)
	if !validIter(sc.Attributes.Iter()) {
		sc.Attributes = attribute.NewSet(sanitizeAttrs(sc.Attributes.ToSlice())...)
	}
	// Snapshot falls back on the library when the scope is blank; it must not bring the old strings back.
	//lint:ignore SA1019 the stub still carries the deprecated field and Snapshot reads it
	stub.InstrumentationLibrary = *sc
	return stub.Snapshot()
}

// sanitizeAttrs returns kvs itself when it is valid, otherwise a sanitized copy.
func sanitizeAttrs(kvs []attribute.KeyValue) []attribute.KeyValue {
	if validAttrs(kvs) {
		return kvs
	}
	out := make([]attribute.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = attribute.KeyValue{Key: attribute.Key(validString(string(kv.Key))), Value: sanitizeValue(kv.Value)}
	}
	return out
}

func sanitizeValue(v attribute.Value) attribute.Value {
	switch v.Type() {
	case attribute.STRING:
		return attribute.StringValue(validString(v.AsString()))
	case attribute.STRINGSLICE:
		ss := v.AsStringSlice() // a copy
		for i := range ss {
			ss[i] = validString(ss[i])
		}
		return attribute.StringSliceValue(ss)
	case attribute.SLICE:
		vs := v.AsSlice() // a copy
		for i := range vs {
			vs[i] = sanitizeValue(vs[i])
		}
		return attribute.SliceValue(vs...)
	case attribute.MAP:
		return attribute.MapValue(sanitizeAttrs(v.AsMap())...)
	}
	return v
}

// validString replaces each invalid UTF-8 sequence in s with U+FFFD; a valid s comes back as is.
func validString(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
