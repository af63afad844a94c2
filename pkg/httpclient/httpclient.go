// Package httpclient is the service-to-service HTTP client: go-retryablehttp around an otelhttp
// transport, bounded retries for idempotent calls only, a deadline on every call, the caller's
// identity token attached, and failures decoded from the {"error"} envelope into *errs.Error.
package httpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/telemetry"
)

// maxResponse bounds how much of a peer's answer we read.
const maxResponse = 1 << 20

// Options configure a Client.
type Options struct {
	// Service names the peer in error messages ("link service unavailable").
	Service        string
	BaseURL        string
	TracerProvider trace.TracerProvider
	// Timeout bounds a whole call, retries included (default 5s).
	Timeout time.Duration
	// RetryMax is the number of retries of an idempotent call (default 2).
	RetryMax int
}

// Client calls one peer service.
type Client struct {
	service string
	base    string
	timeout time.Duration
	rc      *retryablehttp.Client
}

// New builds a Client.
func New(opts Options) *Client {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.RetryMax == 0 {
		opts.RetryMax = 2
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	rc := retryablehttp.NewClient()
	rc.Logger = nil
	rc.RetryMax = opts.RetryMax
	rc.RetryWaitMin = 25 * time.Millisecond
	rc.RetryWaitMax = 400 * time.Millisecond
	rc.CheckRetry = retryIdempotentOnly
	rc.Backoff = backoff
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	rc.HTTPClient = &http.Client{Transport: otelhttp.NewTransport(base,
		otelhttp.WithTracerProvider(opts.TracerProvider),
		otelhttp.WithPropagators(telemetry.Propagator()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return r.Method + " " + opts.Service + " " + r.URL.Path
		}),
	)}
	return &Client{service: opts.Service, base: opts.BaseURL, timeout: opts.Timeout, rc: rc}
}

type retryKey struct{}

// retryIdempotentOnly retries only calls marked safe to repeat (a POST that may have taken
// effect is never sent twice), and only on transient failures: a failed connection or a 502,
// 503 or 504. A 429 from a peer is an answer for the end caller, not a reason to wait here.
func retryIdempotentOnly(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if safe, _ := ctx.Value(retryKey{}).(bool); !safe {
		return false, nil
	}
	if err != nil {
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, nil
	}
	return false, nil
}

// backoff doubles from min to max. Unlike the library default it ignores a peer's
// Retry-After: the whole call is bounded by the client's deadline.
func backoff(min, max time.Duration, attempt int, _ *http.Response) time.Duration {
	d := min << attempt
	if d <= 0 || d > max {
		return max
	}
	return d
}

// Request describes one call.
type Request struct {
	Method string
	Path   string
	Body   any
	// IdempotencyKey, when set, marks the call as safe to retry and is sent as the
	// Idempotency-Key header. No linkmesh server reads that header, so retrying is only safe
	// when the operation itself is idempotent for this key, as quota release is by unit id.
	IdempotencyKey string
	// Idempotent marks a POST whose repetition changes nothing (a lookup or a revocation
	// sent as POST to keep a token out of URLs), so it may be retried.
	Idempotent bool
}

// Do performs req and decodes a 2xx JSON answer into out (which may be nil).
func (c *Client) Do(ctx context.Context, req Request, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	idempotent := req.Method == http.MethodGet || req.Method == http.MethodHead ||
		req.Method == http.MethodPut || req.Method == http.MethodDelete || req.IdempotencyKey != "" || req.Idempotent
	ctx = context.WithValue(ctx, retryKey{}, idempotent)

	var body io.Reader
	if req.Body != nil {
		b, err := json.Marshal(req.Body)
		if err != nil {
			return fmt.Errorf("encode %s request: %w", c.service, err)
		}
		body = bytes.NewReader(b)
	}
	hr, err := retryablehttp.NewRequestWithContext(ctx, req.Method, c.base+req.Path, body)
	if err != nil {
		return fmt.Errorf("build %s request: %w", c.service, err)
	}
	hr.Header.Set("Accept", "application/json")
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	// The peer stops working when we stop waiting.
	if dl, ok := ctx.Deadline(); ok {
		hr.Header.Set(server.TimeoutHeader, strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
	}
	if req.IdempotencyKey != "" {
		hr.Header.Set("Idempotency-Key", req.IdempotencyKey)
	}
	tok, err := identity.TokenFor(ctx, c.service)
	if err != nil {
		return fmt.Errorf("call %s: %w", c.service, err)
	}
	if tok != "" {
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.rc.Do(hr)
	if err != nil {
		return errs.Unavailable(c.service+" service unavailable", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return errs.Unavailable(c.service+" service unavailable", err)
	}
	if resp.StatusCode >= 300 {
		return decodeFailure(c.service, resp, data)
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode %s response: %w", c.service, err)
	}
	return nil
}

// decodeFailure turns a peer's envelope into an *errs.Error with the same status and message,
// so the gateway can pass it on unchanged.
func decodeFailure(service string, resp *http.Response, data []byte) error {
	var env errs.Envelope
	if err := json.Unmarshal(data, &env); err != nil || env.Error == "" {
		return &errs.Error{Kind: errs.KindInternal, Message: "internal server error",
			Err: fmt.Errorf("%s answered %d without an error envelope", service, resp.StatusCode)}
	}
	if resp.StatusCode == http.StatusUnauthorized && identity.IsTokenRejection(env.Error) {
		return &errs.Error{Kind: errs.KindInternal, Message: "internal server error",
			Err: fmt.Errorf("%s refused our internal token: %s", service, env.Error)}
	}
	e := &errs.Error{Kind: errs.KindFromStatus(resp.StatusCode), Message: env.Error}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	e.RateLimits = ratelimit.Parse(resp.Header.Get(ratelimit.HeaderPolicy), resp.Header.Get(ratelimit.HeaderState))
	if e.Kind == errs.KindInternal {
		e.Err = fmt.Errorf("%s answered %d: %s", service, resp.StatusCode, env.Error)
	}
	return e
}

// Ready asks the peer's /readyz; nil means it can serve.
func (c *Client) Ready(ctx context.Context) error {
	return c.Do(ctx, Request{Method: http.MethodGet, Path: "/readyz"}, nil)
}

// ReadBounded returns the body of resp, an answer from an outside party (an identity
// provider, a captcha verifier) called with a client timeout: a 200 read whole, or an error
// for any other status (its body unread) and for a body beyond max bytes, which is refused
// rather than cut. what names the answer in errors. It closes the body.
func ReadBounded(resp *http.Response, max int64, what string) ([]byte, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: answered %s", what, resp.Status)
	}
	if resp.ContentLength > max {
		return nil, fmt.Errorf("%s of %d bytes exceeds %d", what, resp.ContentLength, max)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", what, err)
	case int64(len(body)) > max:
		return nil, fmt.Errorf("%s exceeds %d bytes", what, max)
	}
	return body, nil
}
