// Package store is the moderation service's own MongoDB database: the permanent-request
// queue and the audit log.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/services/moderation/internal/requests"
)

const (
	requestsCollection = "permanent_requests"
	reportsCollection  = "abuse_reports"
	auditCollection    = "audit_log"
	claimsCollection   = "resolution_claims"
)

// Store is the moderation service's database.
type Store struct {
	requests, reports, audit, claims *mongo.Collection
	// pending gives racing requests for one link turns within this replica (see InsertRequest).
	pending mongodb.Turns
}

// New returns a store over db after making sure its indexes exist. The unique
// pending_for index is what keeps one pending request per link under any concurrency:
// a pending request holds "link:<code>", a resolved one "done:<id>".
func New(ctx context.Context, db *mongo.Database) (*Store, error) {
	err := mongodb.EnsureIndexes(ctx, db,
		mongodb.Index{Collection: requestsCollection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "pending_for", Value: 1}}, Options: options.Index().SetUnique(true).SetName("one_pending_per_link"),
		}},
		mongodb.Index{Collection: requestsCollection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "status", Value: 1}, {Key: "created_at", Value: -1}, {Key: "_id", Value: -1}},
			Options: options.Index().SetName("status_created"),
		}},
		mongodb.Index{Collection: reportsCollection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "status", Value: 1}, {Key: "created_at", Value: -1}, {Key: "_id", Value: -1}},
			Options: options.Index().SetName("status_created"),
		}},
		mongodb.Index{Collection: reportsCollection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "link_id", Value: 1}}, Options: options.Index().SetName("link"),
		}},
		mongodb.Index{Collection: auditCollection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: -1}}, Options: options.Index().SetName("created"),
		}},
		mongodb.Index{Collection: auditCollection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "actor_id", Value: 1}, {Key: "created_at", Value: -1}, {Key: "_id", Value: -1}},
			Options: options.Index().SetName("actor_created"),
		}},
		mongodb.Index{Collection: auditCollection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "action", Value: 1}, {Key: "created_at", Value: -1}, {Key: "_id", Value: -1}},
			Options: options.Index().SetName("action_created"),
		}},
	)
	if err != nil {
		return nil, err
	}
	return &Store{requests: db.Collection(requestsCollection), reports: db.Collection(reportsCollection),
		audit: db.Collection(auditCollection), claims: db.Collection(claimsCollection)}, nil
}

// queue is the collection of q.
func (s *Store) queue(q requests.Queue) *mongo.Collection {
	if q == requests.QueueReports {
		return s.reports
	}
	return s.requests
}

type requestDoc struct {
	ID             string     `bson:"_id"`
	LinkID         string     `bson:"link_id,omitempty"`
	ShortCode      string     `bson:"short_code"`
	OwnerID        string     `bson:"owner_id"`
	Reason         string     `bson:"reason"`
	Status         string     `bson:"status"`
	PendingFor     string     `bson:"pending_for"`
	CreatedAt      time.Time  `bson:"created_at"`
	ResolvedAt     *time.Time `bson:"resolved_at,omitempty"`
	ResolvedBy     string     `bson:"resolved_by,omitempty"`
	ResolutionNote string     `bson:"resolution_note,omitempty"`
}

func fromRequestDoc(d requestDoc) requests.Request {
	return requests.Request{ID: d.ID, LinkID: d.LinkID, ShortCode: d.ShortCode, OwnerID: d.OwnerID, Reason: d.Reason, Status: d.Status,
		CreatedAt: d.CreatedAt.UTC(), ResolvedAt: d.ResolvedAt, ResolvedBy: d.ResolvedBy, ResolutionNote: d.ResolutionNote}
}

// InsertRequest files a pending request; requests.ErrPending when its link has one.
//
// Racing requests for one link take turns within a replica: on the embedded store they
// deadlock on the unique pending_for index, and with three or more the aborted ones keep
// deadlocking (see mongodb.Turns; TestOnePendingRequestPerLink saw them as 500s).
func (s *Store) InsertRequest(ctx context.Context, r requests.Request) error {
	pendingFor := "link:" + r.ShortCode
	done, err := s.pending.Take(ctx, pendingFor)
	if err != nil {
		return fmt.Errorf("insert permanent request: %w", err)
	}
	defer done()
	_, err = s.requests.InsertOne(ctx, requestDoc{ID: r.ID, LinkID: r.LinkID, ShortCode: r.ShortCode, OwnerID: r.OwnerID, Reason: r.Reason,
		Status: r.Status, PendingFor: pendingFor, CreatedAt: r.CreatedAt})
	if mongo.IsDuplicateKeyError(err) {
		return requests.ErrPending
	}
	if err != nil {
		return fmt.Errorf("insert permanent request: %w", err)
	}
	return nil
}

// Request returns request id; requests.ErrNotFound if none.
func (s *Store) Request(ctx context.Context, id string) (requests.Request, error) {
	d, err := byID[requestDoc](ctx, s.requests, "permanent request", id)
	return fromRequestDoc(d), err
}

// Requests returns a page of requests in status ("" for all), newest first, and the total.
func (s *Store) Requests(ctx context.Context, status string, skip, limit int64) ([]requests.Request, int64, error) {
	return byStatus(ctx, s.requests, "permanent requests", status, skip, limit, fromRequestDoc)
}

// byID decodes document id of coll; requests.ErrNotFound if none.
func byID[T any](ctx context.Context, coll *mongo.Collection, what, id string) (T, error) {
	var d T
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return d, requests.ErrNotFound
	}
	if err != nil {
		return d, fmt.Errorf("find %s: %w", what, err)
	}
	return d, nil
}

// byStatus returns a page of coll's entries in status ("" for all), newest first, each as
// view makes it, and the total.
func byStatus[T, V any](ctx context.Context, coll *mongo.Collection, what, status string, skip, limit int64, view func(T) V) ([]V, int64, error) {
	filter := bson.D{}
	if status != "" {
		filter = bson.D{{Key: "status", Value: status}}
	}
	docs, total, err := mongodb.FindPage[T](ctx, coll, what, filter, mongodb.NewestFirst(), skip, limit)
	if err != nil {
		return nil, 0, err
	}
	out := make([]V, 0, len(docs))
	for _, d := range docs {
		out = append(out, view(d))
	}
	return out, total, nil
}

// claimRec holds an entry for the resolution in progress: inserted once, its unique id is
// what makes one resolver win, and its action lets a retry of the same resolution finish
// what a failed attempt left.
type claimRec struct {
	ID     string    `bson:"_id"`
	Action string    `bson:"action"`
	By     string    `bson:"by"`
	At     time.Time `bson:"at"`
}

// Claim takes entry id of queue q for action by: it succeeds when nobody holds it, when the
// holder is resolving with the same action (a retry finishing what a failed attempt left), or
// when the hold is older than staleBefore (its resolver died). It returns the action of a
// stale hold it took over ("" otherwise).
func (s *Store) Claim(ctx context.Context, q requests.Queue, id, action, by string, now, staleBefore time.Time) (bool, string, error) {
	key := q.String() + ":" + id
	for range 2 {
		_, err := s.claims.InsertOne(ctx, claimRec{ID: key, Action: action, By: by, At: now})
		if err == nil {
			return true, "", nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return false, "", fmt.Errorf("claim %s: %w", q, err)
		}
		var held claimRec
		err = s.claims.FindOne(ctx, bson.D{{Key: "_id", Value: key}}).Decode(&held)
		switch {
		case errors.Is(err, mongo.ErrNoDocuments):
			continue // released meanwhile
		case err != nil:
			return false, "", fmt.Errorf("read claim of %s: %w", q, err)
		case held.Action == action:
			return true, "", nil
		case held.At.Before(staleBefore):
			if _, err := s.claims.DeleteOne(ctx, bson.D{{Key: "_id", Value: key}, {Key: "at", Value: held.At}}); err != nil {
				return false, "", fmt.Errorf("release stale claim of %s: %w", q, err)
			}
			if _, err := s.claims.InsertOne(ctx, claimRec{ID: key, Action: action, By: by, At: now}); err != nil {
				if mongo.IsDuplicateKeyError(err) {
					return false, "", nil // another resolver took it over first
				}
				return false, "", fmt.Errorf("claim %s: %w", q, err)
			}
			return true, held.Action, nil
		default:
			return false, "", nil
		}
	}
	return false, "", nil
}

// Unclaim gives up the hold on entry id of queue q for action, when nothing of the action
// happened, so another action need not wait for the hold to go stale.
func (s *Store) Unclaim(ctx context.Context, q requests.Queue, id, action string) error {
	if _, err := s.claims.DeleteOne(ctx, bson.D{{Key: "_id", Value: q.String() + ":" + id}, {Key: "action", Value: action}}); err != nil {
		return fmt.Errorf("release claim of %s: %w", q, err)
	}
	return nil
}

// Finish resolves entry id of queue q, which the caller holds: its final status, who, when,
// the note. The hold stays, harmless: a resolved entry is never claimed again.
func (s *Store) Finish(ctx context.Context, q requests.Queue, id, _, status, by, note string, at time.Time) (bool, error) {
	filter := bson.D{{Key: "_id", Value: id}, {Key: "status", Value: requests.StatusPending}}
	set := bson.D{{Key: "status", Value: status}, {Key: "resolved_at", Value: at}, {Key: "resolved_by", Value: by},
		{Key: "resolution_note", Value: note}}
	if q == requests.QueuePermanent {
		// The link may get a new pending request.
		set = append(set, bson.E{Key: "pending_for", Value: "done:" + id})
	}
	res, err := s.queue(q).UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: set}})
	if err != nil {
		return false, fmt.Errorf("finish %s: %w", q, err)
	}
	return res.MatchedCount == 1, nil
}

type auditDoc struct {
	ID         string         `bson:"_id"`
	ActorID    string         `bson:"actor_id"`
	Action     string         `bson:"action"`
	TargetType string         `bson:"target_type"`
	TargetID   string         `bson:"target_id"`
	Detail     map[string]any `bson:"detail"`
	IPHash     string         `bson:"ip_hash"`
	UserAgent  string         `bson:"user_agent"`
	CreatedAt  time.Time      `bson:"created_at"`
}

// InsertAudit writes e once: writing an entry with the same id again is a no-op, so the
// step of a retried action can be repeated.
func (s *Store) InsertAudit(ctx context.Context, e requests.AuditEntry) error {
	_, err := s.audit.InsertOne(ctx, auditDoc{ID: e.ID, ActorID: e.ActorID, Action: e.Action, TargetType: e.TargetType,
		TargetID: e.TargetID, Detail: e.Detail, IPHash: e.IPHash, UserAgent: e.UserAgent, CreatedAt: e.CreatedAt})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("insert audit entry: %w", err)
	}
	return nil
}

// Forget keeps of userID, whose account is going, only what the audit trail needs: the
// entries of their actions lose the User-Agent (the keyed hash of the address stays), and
// their permanent requests (their links are purged) go with the reasons they wrote.
func (s *Store) Forget(ctx context.Context, userID string) error {
	if _, err := s.audit.UpdateMany(ctx, bson.D{{Key: "actor_id", Value: userID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "user_agent", Value: ""}}}}); err != nil {
		return fmt.Errorf("forget audit actor: %w", err)
	}
	if _, err := s.requests.DeleteMany(ctx, bson.D{{Key: "owner_id", Value: userID}}); err != nil {
		return fmt.Errorf("forget permanent requests: %w", err)
	}
	return nil
}
