// Package app wires the gateway on what the boot path opened; main and the component tests
// both start it with service.For.
package app

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/services/gateway/internal/captcha"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clicks"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"
	"github.com/linkmesh/linkmesh/services/gateway/internal/config"
	gwhttp "github.com/linkmesh/linkmesh/services/gateway/internal/http"
	"github.com/linkmesh/linkmesh/services/gateway/internal/redirect"
	"github.com/linkmesh/linkmesh/services/gateway/internal/session"
	"github.com/linkmesh/linkmesh/services/gateway/internal/webapp"
)

// Wire builds the gateway on what the boot path opened. It subscribes the redirect cache
// to link invalidations before the first request, so no change can slip past it.
func Wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	linkHTTP, authHTTP := env.Peer(pkgconfig.Link, cfg.LinkURL, 0), env.Peer(pkgconfig.Auth, cfg.AuthURL, 0)
	authClient := auth.New(authHTTP)
	// API calls wait out the link service's whole creation budget; redirect misses keep the
	// default deadline.
	links := link.New(env.Peer(pkgconfig.Link, cfg.LinkURL, link.CreateBudget+time.Second))
	cache := redirect.NewCache(cfg.RedirectCacheSize, redirect.LinkResolver{Links: link.New(linkHTTP), Keys: env.Keys})
	subCtx, cancelSub := context.WithCancel(context.WithoutCancel(ctx))
	if err := cache.Subscribe(subCtx, env.Stores.Redis, env.Logger); err != nil {
		cancelSub()
		return service.Parts{}, err
	}
	web, err := webapp.New(webapp.Config{CaptchaSiteKey: cfg.CaptchaSiteKey, CaptchaScriptURL: cfg.CaptchaScriptURL,
		CaptchaRequired: cfg.CaptchaVerifyURL != ""})
	if err != nil {
		cancelSub()
		return service.Parts{}, err
	}
	if cfg.CaptchaVerifyURL != "" && cfg.CaptchaSiteKey == "" {
		env.Logger.Warn("captchas are verified but the web application has no widget (LINKMESH_CAPTCHA_SITE_KEY unset): anonymous visitors cannot shorten, register or report in a browser")
	}
	ips := clientip.NewResolver(cfg.Proxies)
	recorder, closeGeo, err := newRecorder(cfg, env)
	if err != nil {
		cancelSub()
		return service.Parts{}, err
	}
	measure(env.Metrics, cache, recorder)
	gate := session.NewGate(authClient, env.Keys, ips,
		clientip.NewKeyer(cfg.IdentitySecret.Reveal()), cfg.CookieSecure)
	transport := otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithTracerProvider(env.TracerProvider))
	env.Server.PublicEdge() // the public's trace context is linked, never continued
	gwhttp.Register(env.Server.App(), gwhttp.Deps{
		Links:      links,
		Auth:       authClient,
		Moderation: moderation.New(env.Peer(pkgconfig.Moderation, cfg.ModerationURL, 0)),
		Gate:       gate,
		BaseURL:    cfg.BaseURL,
		Captcha:    captcha.New(cfg.CaptchaVerifyURL, cfg.CaptchaSecret.Reveal(), transport),
		Redirect:   redirect.NewHandler(cache, recorder, ips),
		Web:        web,
		Health:     map[string]gwhttp.Probe{pkgconfig.Auth: authHTTP.Ready, pkgconfig.Link: linkHTTP.Ready},
		Logger:     env.Logger,
	})
	return service.Parts{Workers: []func(context.Context){recorder.Run}, Close: func() { cancelSub(); closeGeo() }}, nil
}

// producerQueue bounds the clicks waiting for Redis in the producer, packed up to
// analytics.MaxPerEntry to an entry; producerBatch is the most entries it appends in one
// call: under load, 512 clicks (about 90 KB), which keeps the gateway's core from the
// redirects, and Redis from its other callers, for well under a millisecond.
const (
	producerQueue = 10000
	producerBatch = 8
)

// newRecorder builds the click pipeline's edge: enrichment (GeoIP when configured, the
// shared daily salt) and the producer onto the clicks stream.
func newRecorder(cfg *config.Config, env *service.Env) (*clicks.Recorder, func(), error) {
	var countries clicks.Countries
	closeGeo := func() {}
	if cfg.GeoIPDB != "" {
		geo, err := clicks.OpenGeoIP(cfg.GeoIPDB)
		if err != nil {
			return nil, nil, err
		}
		countries, closeGeo = geo, func() { _ = geo.Close() }
	}
	enricher, err := clicks.NewEnricher(countries, clicks.NewRedisSalts(env.Stores.Redis))
	if err != nil {
		closeGeo()
		return nil, nil, fmt.Errorf("user agent parser: %w", err)
	}
	// The producer's queue is short: visits wait in the spool, which outlives a crash, and
	// go to the producer only as fast as it writes.
	producer, err := stream.NewProducer(stream.ProducerOptions{Client: env.Stores.Redis, Stream: analytics.Stream, Logger: env.Logger,
		QueueSize: max(1, min(cfg.ClickQueue, producerQueue)/analytics.MaxPerEntry), BatchSize: producerBatch})
	if err != nil {
		closeGeo()
		return nil, nil, err
	}
	rec, err := clicks.NewRecorder(clicks.RecorderOptions{QueueSize: cfg.ClickQueue, SpoolPath: cfg.ClickSpool, SpoolSize: cfg.ClickSpoolMB << 20,
		Enricher: enricher, Producer: producer, Logger: env.Logger})
	if err != nil {
		closeGeo()
		return nil, nil, fmt.Errorf("LINKMESH_CLICK_SPOOL=%q: %w", cfg.ClickSpool, err)
	}
	return rec, closeGeo, nil
}
