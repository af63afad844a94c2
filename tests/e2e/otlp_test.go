package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// span is a received span with the name of the service that sent it.
type span struct {
	service string
	*tracepb.Span
}

func (s span) traceID() string  { return hex.EncodeToString(s.TraceId) }
func (s span) spanID() string   { return hex.EncodeToString(s.SpanId) }
func (s span) parentID() string { return hex.EncodeToString(s.ParentSpanId) }

func (s span) attr(key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// otlpReceiver is a minimal OTLP/HTTP trace receiver, so the services export to a real
// endpoint over the wire exactly as they would to a collector.
type otlpReceiver struct {
	srv   *http.Server
	addr  string
	mu    sync.Mutex
	spans []span
}

func startOTLPReceiver() (*otlpReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &otlpReceiver{addr: ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = &http.Server{Handler: mux}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *otlpReceiver) Endpoint() string { return "http://" + r.addr }

func (r *otlpReceiver) Close() { _ = r.srv.Close() }

func (r *otlpReceiver) export(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, span{service: service, Span: s})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

// all returns every span received.
func (r *otlpReceiver) all() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// trace returns the received spans of traceID.
func (r *otlpReceiver) trace(traceID string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if s.traceID() == traceID {
			out = append(out, s)
		}
	}
	return out
}
