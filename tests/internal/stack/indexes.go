package stack

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// CopyIndexes gives dst the indexes of src, for a scratch collection shaped as a real one.
func CopyIndexes(ctx context.Context, src, dst *mongo.Collection) error {
	cur, err := src.Indexes().List(ctx)
	if err != nil {
		return fmt.Errorf("list indexes: %w", err)
	}
	var specs []struct {
		Name   string `bson:"name"`
		Key    bson.D `bson:"key"`
		Unique bool   `bson:"unique"`
	}
	if err := cur.All(ctx, &specs); err != nil {
		return fmt.Errorf("list indexes: %w", err)
	}
	for _, s := range specs {
		if s.Name == "_id_" {
			continue
		}
		if _, err := dst.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: s.Key, Options: options.Index().SetName(s.Name).SetUnique(s.Unique)}); err != nil {
			return fmt.Errorf("create index %s: %w", s.Name, err)
		}
	}
	return nil
}
