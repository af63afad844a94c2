// Package store keeps the auth service's accounts, sessions and login records in its own
// MongoDB database. It is the only package that touches that database.
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
)

// Collections the store owns.
const (
	Users        = "users"
	Sessions     = "sessions"
	LoginRecords = "login_records"
	APITokens    = "api_tokens"
	// PasswordResets holds the password-reset tokens mailed out, by the hash of the token.
	PasswordResets = "password_resets"
	// EmailVerifications holds the verification tokens mailed out, by the hash of the token.
	EmailVerifications = "email_verifications"
)

// Store is the MongoDB account store; it implements accounts.Store.
type Store struct {
	users, sessions, records, tokens, resets, verifications *mongo.Collection
	// recordRetention is how long a login record is kept: its expires_at is its created_at
	// plus this.
	recordRetention time.Duration
	// slots lets one insert of an account's token slot at a time reach the store (see
	// InsertToken).
	slots mongodb.Turns
	// emails lets one insert of an e-mail at a time reach the store (see InsertUser).
	emails mongodb.Turns
}

// SchemaVersion is the version of the schema this store reads (see Migrate).
var SchemaVersion = len(migrations)

// Migrate brings db's schema up to date and makes sure its indexes exist.
func Migrate(ctx context.Context, db *mongo.Database) error {
	if err := mongodb.Migrate(ctx, db, migrations...); err != nil {
		return err
	}
	return mongodb.EnsureIndexes(ctx, db, indexes()...)
}

// New returns a store over db after Migrate (which does nothing under a context the boot path
// marked: the migration ran before). Login records it writes expire recordRetention after
// they were made; those without an expiry get theirs.
func New(ctx context.Context, db *mongo.Database, recordRetention time.Duration) (*Store, error) {
	if recordRetention <= 0 {
		return nil, errors.New("store: the login record retention must be positive")
	}
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	if err := setRecordExpiry(ctx, db.Collection(LoginRecords), recordRetention); err != nil {
		return nil, err
	}
	return &Store{users: db.Collection(Users), sessions: db.Collection(Sessions),
		records: db.Collection(LoginRecords), tokens: db.Collection(APITokens), resets: db.Collection(PasswordResets),
		verifications:   db.Collection(EmailVerifications),
		recordRetention: recordRetention}, nil
}

// ttlIndex is the name of the TTL index on expires_at of sessions, login records and API tokens: the
// server deletes a document once its expires_at has passed (expireAfterSeconds 0).
const ttlIndex = "expires_at_ttl"

func indexes() []mongodb.Index {
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
	ttl := func(coll string) mongodb.Index {
		return mongodb.Index{Collection: coll, Model: mongo.IndexModel{Keys: bson.D{{Key: "expires_at", Value: 1}},
			Options: options.Index().SetName(ttlIndex).SetExpireAfterSeconds(0)}}
	}
	return []mongodb.Index{
		// The unique index on the lower-cased e-mail is what decides registration races.
		ix(Users, "email_unique", true, "email"),
		// One account per identity provider subject; sparse, so that any number of accounts
		// have none.
		{Collection: Users, Model: mongo.IndexModel{Keys: bson.D{{Key: "idp_uid", Value: 1}},
			Options: options.Index().SetName("idp_uid_unique").SetUnique(true).SetSparse(true)}},
		ix(Users, "role", false, "role"),
		// The admin user list walks this one in its own order (id included, so no page needs
		// a sort in memory); the few moderators and super admins are found through "role".
		ix(Users, "created_at", false, "-created_at", "-_id"),
		// The banned and the suspended: their lists and the overview's counts.
		ix(Users, "status", false, "status"),
		ix(Users, "timeout_until", false, "timeout_until"),
		ttl(Sessions),
		ix(Sessions, "user_id", false, "user_id"),
		ttl(LoginRecords),
		ix(LoginRecords, "created_at", false, "-created_at"),
		ix(LoginRecords, "user_id_created_at", false, "user_id", "-created_at"),
		ix(LoginRecords, "email_created_at", false, "email", "-created_at"),
		// A token is found by its secret's hash; its owner's slots bound the live tokens.
		ix(APITokens, "hash_unique", true, "hash"),
		ix(APITokens, "user_slot_unique", true, "user_id", "slot"),
		ttl(APITokens),
		ttl(PasswordResets),
		ttl(EmailVerifications),
	}
}

// migrations are the steps of the store's schema.
var migrations = []mongodb.Step{
	{Version: 1, Name: "drop the account write holds", Run: mongodb.DropCollections("account_holds")},
}

// setRecordExpiry gives every login record without expires_at one: its created_at plus
// retention, so that the TTL index deletes it. It runs at every start, after the indexes
// exist (the TTL index finds the records without expiry as null): records written without
// one by a replica of another version during a rolling update get theirs at the next start.
// One update over the collection, so a retry does only what is left.
func setRecordExpiry(ctx context.Context, records *mongo.Collection, retention time.Duration) error {
	filter := bson.D{{Key: "expires_at", Value: nil}, {Key: "created_at", Value: bson.D{{Key: "$type", Value: "date"}}}}
	expiry := bson.D{{Key: "$add", Value: bson.A{"$created_at", retention.Milliseconds()}}}
	update := bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "expires_at", Value: expiry}}}}}
	if _, err := records.UpdateMany(ctx, filter, update); err != nil {
		return fmt.Errorf("set the expiry of login records: %w", err)
	}
	return nil
}

func byID(id string) bson.D { return bson.D{{Key: "_id", Value: id}} }
