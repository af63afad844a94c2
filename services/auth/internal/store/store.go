// Package store keeps the auth service's accounts, sessions and login records in its own
// MongoDB database. It is the only package that touches that database.
package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
)

// Collections the store owns.
const (
	Users        = "users"
	Sessions     = "sessions"
	LoginRecords = "login_records"
)

// accountHolds is the collection of the holds of accounts being written (see updateOne).
const accountHolds = "account_holds"

// Store is the MongoDB account store; it implements accounts.Store.
type Store struct {
	users, sessions, records *mongo.Collection
	// holds serialize the writes of one account (see updateOne).
	holds *mongo.Collection
}

// New returns a store over db after making sure its indexes exist; every replica runs it.
func New(ctx context.Context, db *mongo.Database) (*Store, error) {
	ix := func(coll, name string, unique bool, keys ...string) mongodb.Index {
		d := bson.D{}
		for _, k := range keys {
			order := 1
			if k[0] == '-' {
				k, order = k[1:], -1
			}
			d = append(d, bson.E{Key: k, Value: order})
		}
		return mongodb.Index{Collection: coll, Model: mongo.IndexModel{Keys: d,
			Options: options.Index().SetName(name).SetUnique(unique)}}
	}
	err := mongodb.EnsureIndexes(ctx, db,
		// The unique index on the lower-cased e-mail is what decides registration races.
		ix(Users, "email_unique", true, "email"),
		// Not unique: FerretDB ignores "sparse", and a unique index would then allow only one
		// account without idp_uid. Linking is conditional on idp_uid being unset instead.
		ix(Users, "idp_uid", false, "idp_uid"),
		ix(Users, "role", false, "role"),
		// The admin user list walks this one in its own order (id included, so no page needs
		// a sort in memory); the few moderators and super admins are found through "role".
		ix(Users, "created_at", false, "-created_at", "-_id"),
		// The banned and the suspended: their lists and the overview's counts.
		ix(Users, "status", false, "status"),
		ix(Users, "timeout_until", false, "timeout_until"),
		ix(Sessions, "expires_at", false, "expires_at"),
		ix(Sessions, "user_id", false, "user_id"),
		ix(LoginRecords, "created_at", false, "-created_at"),
		ix(LoginRecords, "user_id_created_at", false, "user_id", "-created_at"),
		ix(LoginRecords, "email_created_at", false, "email", "-created_at"),
	)
	if err != nil {
		return nil, err
	}
	return &Store{users: db.Collection(Users), sessions: db.Collection(Sessions),
		records: db.Collection(LoginRecords), holds: db.Collection(accountHolds)}, nil
}

func byID(id string) bson.D { return bson.D{{Key: "_id", Value: id}} }

// SweepInterval is how often expired documents are deleted (see mongodb.Sweeper). Expired
// ones are already ignored by every read, so the interval only bounds the space they take.
const SweepInterval = 10 * time.Minute
