package mongodb

import (
	"context"
	"strconv"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// NewTracer returns a command monitor that records one client span per MongoDB command.
//
// Ours because no OpenTelemetry instrumentation has been released for mongo-driver v2 (only
// the v1 otelmongo exists); swap this for the upstream package once it is tagged. Span names
// and attributes follow the database semantic conventions; the command text is not recorded,
// since it may hold user data.
func NewTracer(tp trace.TracerProvider) *event.CommandMonitor {
	t := &tracer{tracer: tp.Tracer("github.com/linkmesh/linkmesh/pkg/mongodb")}
	return &event.CommandMonitor{Started: t.started, Succeeded: t.succeeded, Failed: t.failed}
}

type tracer struct {
	tracer trace.Tracer
	spans  sync.Map // connection id + request id → trace.Span
}

type spanKey struct {
	conn string
	req  int64
}

func (t *tracer) started(ctx context.Context, e *event.CommandStartedEvent) {
	collection := collectionOf(e.CommandName, e.Command)
	name := e.CommandName
	if collection != "" {
		name += " " + e.DatabaseName + "." + collection
	}
	attrs := []attribute.KeyValue{
		semconv.DBSystemNameMongoDB,
		semconv.DBNamespace(e.DatabaseName),
		semconv.DBOperationName(e.CommandName),
	}
	if collection != "" {
		attrs = append(attrs, semconv.DBCollectionName(collection))
	}
	if host, port, ok := hostPort(e.ConnectionID); ok {
		attrs = append(attrs, semconv.ServerAddress(host), semconv.ServerPort(port))
	}
	_, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	t.spans.Store(spanKey{e.ConnectionID, e.RequestID}, span)
}

func (t *tracer) succeeded(_ context.Context, e *event.CommandSucceededEvent) {
	if v, ok := t.spans.LoadAndDelete(spanKey{e.ConnectionID, e.RequestID}); ok {
		v.(trace.Span).End()
	}
}

func (t *tracer) failed(_ context.Context, e *event.CommandFailedEvent) {
	if v, ok := t.spans.LoadAndDelete(spanKey{e.ConnectionID, e.RequestID}); ok {
		span := v.(trace.Span)
		span.SetStatus(codes.Error, e.Failure.Error())
		span.End()
	}
}

// collectionOf reads the collection from the command document: by convention it is the value
// of the command-name key (find: "links").
func collectionOf(command string, doc bson.Raw) string {
	v, err := doc.LookupErr(command)
	if err != nil {
		return ""
	}
	s, ok := v.StringValueOK()
	if !ok {
		return ""
	}
	return s
}

// hostPort splits the driver's connection id ("host:port[-n]").
func hostPort(connID string) (string, int, bool) {
	for i := len(connID) - 1; i >= 0; i-- {
		if connID[i] == '[' {
			connID = connID[:i]
			break
		}
	}
	for i := len(connID) - 1; i >= 0; i-- {
		if connID[i] == ':' {
			p, err := strconv.Atoi(connID[i+1:])
			if err != nil {
				return "", 0, false
			}
			return connID[:i], p, true
		}
	}
	return "", 0, false
}
