package mongodb

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"
)

// NewestFirst sorts lists by creation time, newest first; the id breaks ties between
// documents of the same millisecond, so pages never overlap or skip.
func NewestFirst() bson.D {
	return bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: -1}}
}

// FindPage counts the documents of coll matching filter and decodes the page of them at skip
// (at most limit, in sort order) into T. The count and the page are read at once, so a list
// waits for the slower of the two, not for both. what names the documents in errors.
func FindPage[T any](ctx context.Context, coll *mongo.Collection, what string, filter, sort bson.D, skip, limit int64) ([]T, int64, error) {
	var (
		total int64
		docs  []T
	)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		if total, err = coll.CountDocuments(ctx, filter); err != nil {
			return fmt.Errorf("count %s: %w", what, err)
		}
		return nil
	})
	g.Go(func() (err error) {
		docs, err = Find[T](ctx, coll, what, filter, sort, skip, limit)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, 0, err
	}
	return docs, total, nil
}

// Find decodes the documents of coll matching filter at skip (at most limit, in sort order)
// into T, without counting them all. what names the documents in errors.
func Find[T any](ctx context.Context, coll *mongo.Collection, what string, filter, sort bson.D, skip, limit int64) ([]T, error) {
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(sort).SetSkip(skip).SetLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("find %s: %w", what, err)
	}
	var docs []T
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return docs, nil
}
