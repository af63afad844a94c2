package link

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/linkmesh/linkmesh/pkg/httpclient"
)

// EventStream is the Redis stream of link events, fanned out into webhook deliveries.
const EventStream = "link-events"

// Link events, as webhooks receive them.
const (
	EventCreated  = "link.created"
	EventUpdated  = "link.updated"
	EventRenewed  = "link.renewed"
	EventDeleted  = "link.deleted"
	EventDisabled = "link.disabled"
	EventEnabled  = "link.enabled"
	EventPurged   = "link.purged"
	EventExpired  = "link.expired"
	// EventPing is the test delivery of one webhook; nobody subscribes to it.
	EventPing = "ping"
)

// WebhookEvents lists the events a webhook may subscribe to, in the API's order.
func WebhookEvents() []string {
	return []string{EventCreated, EventUpdated, EventRenewed, EventDeleted, EventDisabled, EventEnabled, EventPurged, EventExpired}
}

// MaxWebhooks is how many webhooks one user may have.
const MaxWebhooks = 5

// Webhook is the public view of a webhook: never its secret.
type Webhook struct {
	ID             string    `json:"id"`
	URL            string    `json:"url"`
	Events         []string  `json:"events"`
	Active         bool      `json:"active"`
	CreatedAt      time.Time `json:"created_at"`
	DisabledReason *string   `json:"disabled_reason"`
}

// WebhookCreateRequest is the body of POST /api/user/webhooks.
type WebhookCreateRequest struct {
	URL    *string   `json:"url"`
	Events *[]string `json:"events"`
}

// WebhookCreated is a new webhook and its signing secret, shown only in this answer.
type WebhookCreated struct {
	Webhook Webhook `json:"webhook"`
	Secret  string  `json:"secret"`
}

// WebhookList is {"webhooks": [...]}, newest first.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Delivery is one event's delivery to one webhook, with its attempts so far.
type Delivery struct {
	ID             string     `json:"id"`
	EventID        string     `json:"event_id"`
	Type           string     `json:"type"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	LastStatusCode *int       `json:"last_status_code"`
	LastError      *string    `json:"last_error"`
	CreatedAt      time.Time  `json:"created_at"`
	DeliveredAt    *time.Time `json:"delivered_at"`
}

// DeliveryList is a page of a webhook's deliveries, newest first.
type DeliveryList struct {
	Deliveries []Delivery `json:"deliveries"`
	Page       int        `json:"page"`
	PageSize   int        `json:"page_size"`
	Total      int64      `json:"total"`
}

// CreateWebhook registers a webhook for the caller.
func (c *Client) CreateWebhook(ctx context.Context, req WebhookCreateRequest) (WebhookCreated, error) {
	var out WebhookCreated
	return out, c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/webhooks", Body: req}, &out)
}

// Webhooks lists the caller's webhooks.
func (c *Client) Webhooks(ctx context.Context) (WebhookList, error) {
	var out WebhookList
	return out, c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/webhooks"}, &out)
}

// DeleteWebhook removes one of the caller's webhooks.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodDelete, Path: "/internal/webhooks/" + url.PathEscape(id)}, nil)
}

// TestWebhook queues a ping to one of the caller's webhooks.
func (c *Client) TestWebhook(ctx context.Context, id string) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/webhooks/" + url.PathEscape(id) + "/test"}, nil)
}

// Deliveries lists a page of one of the caller's webhooks' deliveries; query carries page
// and page_size unchanged.
func (c *Client) Deliveries(ctx context.Context, id string, query url.Values) (DeliveryList, error) {
	var out DeliveryList
	return out, c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet,
		Path: "/internal/webhooks/" + url.PathEscape(id) + "/deliveries?" + query.Encode()}, &out)
}
