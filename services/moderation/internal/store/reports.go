package store

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/services/moderation/internal/requests"
)

// reportDoc is a stored abuse report: what the reporter said about which link, never who
// or from where.
type reportDoc struct {
	ID             string     `bson:"_id"`
	LinkID         string     `bson:"link_id"`
	ShortCode      string     `bson:"short_code"`
	Reason         string     `bson:"reason"`
	Details        string     `bson:"details"`
	Status         string     `bson:"status"`
	CreatedAt      time.Time  `bson:"created_at"`
	ResolvedAt     *time.Time `bson:"resolved_at,omitempty"`
	ResolvedBy     string     `bson:"resolved_by,omitempty"`
	ResolutionNote string     `bson:"resolution_note,omitempty"`
}

func fromReportDoc(d reportDoc) requests.Report {
	return requests.Report{ID: d.ID, LinkID: d.LinkID, ShortCode: d.ShortCode, Reason: d.Reason, Details: d.Details,
		Status: d.Status, CreatedAt: d.CreatedAt.UTC(), ResolvedAt: d.ResolvedAt, ResolvedBy: d.ResolvedBy,
		ResolutionNote: d.ResolutionNote}
}

// InsertReport stores a pending report.
func (s *Store) InsertReport(ctx context.Context, r requests.Report) error {
	_, err := s.reports.InsertOne(ctx, reportDoc{ID: r.ID, LinkID: r.LinkID, ShortCode: r.ShortCode, Reason: r.Reason,
		Details: r.Details, Status: r.Status, CreatedAt: r.CreatedAt})
	if err != nil {
		return fmt.Errorf("insert report: %w", err)
	}
	return nil
}

// Report returns report id; requests.ErrNotFound if none.
func (s *Store) Report(ctx context.Context, id string) (requests.Report, error) {
	d, err := byID[reportDoc](ctx, s.reports, "report", id)
	return fromReportDoc(d), err
}

// Reports returns a page of reports in status ("" for all), newest first, and the total.
func (s *Store) Reports(ctx context.Context, status string, skip, limit int64) ([]requests.Report, int64, error) {
	return byStatus(ctx, s.reports, "reports", status, skip, limit, fromReportDoc)
}

// DeleteReports deletes every report of linkID.
func (s *Store) DeleteReports(ctx context.Context, linkID string) error {
	if _, err := s.reports.DeleteMany(ctx, bson.D{{Key: "link_id", Value: linkID}}); err != nil {
		return fmt.Errorf("delete reports: %w", err)
	}
	return nil
}

// CountPending counts the pending entries of queue q, on its status index.
func (s *Store) CountPending(ctx context.Context, q requests.Queue) (int64, error) {
	n, err := s.queue(q).CountDocuments(ctx, bson.D{{Key: "status", Value: requests.StatusPending}})
	if err != nil {
		return 0, fmt.Errorf("count pending %s: %w", q, err)
	}
	return n, nil
}

// Audit returns a page of the audit log, newest first, filtered by actor and action when
// set, and the total.
func (s *Store) Audit(ctx context.Context, actorID, action string, skip, limit int64) ([]requests.AuditEntry, int64, error) {
	filter := bson.D{}
	if actorID != "" {
		filter = append(filter, bson.E{Key: "actor_id", Value: actorID})
	}
	if action != "" {
		filter = append(filter, bson.E{Key: "action", Value: action})
	}
	docs, total, err := mongodb.FindPage[auditDoc](ctx, s.audit, "audit entries", filter, mongodb.NewestFirst(), skip, limit)
	if err != nil {
		return nil, 0, err
	}
	out := make([]requests.AuditEntry, 0, len(docs))
	for _, d := range docs {
		out = append(out, requests.AuditEntry{ID: d.ID, ActorID: d.ActorID, Action: d.Action, TargetType: d.TargetType,
			TargetID: d.TargetID, Detail: d.Detail, IPHash: d.IPHash, UserAgent: d.UserAgent, CreatedAt: d.CreatedAt.UTC()})
	}
	return out, total, nil
}
