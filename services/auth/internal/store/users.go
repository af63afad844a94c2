package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// userDoc is the stored shape of an account (the SPEC's User fields).
type userDoc struct {
	ID            string     `bson:"_id"`
	Email         string     `bson:"email"`
	FirstName     string     `bson:"first_name"`
	LastName      string     `bson:"last_name"`
	PasswordHash  string     `bson:"password_hash,omitempty"`
	AuthProvider  string     `bson:"auth_provider"`
	IDPUID        string     `bson:"idp_uid,omitempty"`
	Role          string     `bson:"role"`
	Status        string     `bson:"status"`
	TimeoutUntil  *time.Time `bson:"timeout_until,omitempty"`
	TimeoutReason *string    `bson:"timeout_reason,omitempty"`
	BanReason     *string    `bson:"ban_reason,omitempty"`
	QuotaLimit    int        `bson:"quota_limit"`
	CreatedAt     time.Time  `bson:"created_at"`
	UpdatedAt     time.Time  `bson:"updated_at"`
	LastLoginAt   *time.Time `bson:"last_login_at,omitempty"`
	// SessionEpoch is absent (0) until the account's sessions are first ended at once.
	SessionEpoch int64 `bson:"session_epoch,omitempty"`
	// EmailUnverified is present (true) only until the address is verified: accounts from
	// before verification existed count as verified.
	EmailUnverified bool `bson:"email_unverified,omitempty"`
}

// InsertUser stores u; accounts.ErrEmailTaken when the e-mail exists.
//
// Racing registrations of one e-mail take turns within a replica: on the embedded store
// they would deadlock on the unique index (see mongodb.Turns).
func (s *Store) InsertUser(ctx context.Context, u accounts.User) error {
	done, err := s.emails.Take(ctx, u.Email)
	if err != nil {
		return fmt.Errorf("insert user: %w", err)
	}
	defer done()
	_, err = s.users.InsertOne(ctx, userDoc(u))
	if mongo.IsDuplicateKeyError(err) {
		return accounts.ErrEmailTaken
	}
	if err != nil {
		return fmt.Errorf("insert user: %w", err)
	}
	return nil
}

// UserByID returns the account with id; accounts.ErrUserNotFound if none.
func (s *Store) UserByID(ctx context.Context, id string) (accounts.User, error) {
	return s.findUser(ctx, byID(id))
}

// UserByEmail returns the account with the (normalized) e-mail.
func (s *Store) UserByEmail(ctx context.Context, email string) (accounts.User, error) {
	return s.findUser(ctx, bson.D{{Key: "email", Value: email}})
}

// UserByIDPUID returns the account linked to the identity provider subject sub.
func (s *Store) UserByIDPUID(ctx context.Context, sub string) (accounts.User, error) {
	if sub == "" {
		return accounts.User{}, accounts.ErrUserNotFound
	}
	return s.findUser(ctx, bson.D{{Key: "idp_uid", Value: sub}})
}

func (s *Store) findUser(ctx context.Context, filter bson.D) (accounts.User, error) {
	var d userDoc
	err := s.users.FindOne(ctx, filter).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return accounts.User{}, accounts.ErrUserNotFound
	}
	if err != nil {
		return accounts.User{}, fmt.Errorf("find user: %w", err)
	}
	return fromUserDoc(d), nil
}

// LinkIDP links an account without idp_uid to sub in one conditional update: idp_uid set,
// auth_provider google, password hash removed, session epoch raised. Being one update, no
// reader ever sees the account linked with its password still in place. A subject linked to
// another account already (the unique idp_uid index) links nothing.
func (s *Store) LinkIDP(ctx context.Context, userID, sub string, now time.Time) (bool, error) {
	filter := append(byID(userID), bson.E{Key: "idp_uid", Value: bson.D{{Key: "$exists", Value: false}}})
	update := bson.D{
		{Key: "$set", Value: bson.D{{Key: "idp_uid", Value: sub}, {Key: "auth_provider", Value: auth.ProviderGoogle},
			{Key: "updated_at", Value: now}}},
		// The provider verified the address: the account is verified too.
		{Key: "$unset", Value: bson.D{{Key: "password_hash", Value: ""}, {Key: "email_unverified", Value: ""}}},
		{Key: "$inc", Value: bson.D{{Key: "session_epoch", Value: int64(1)}}},
	}
	linked, err := s.updateOne(ctx, "link identity", filter, update)
	if mongo.IsDuplicateKeyError(err) {
		return false, nil
	}
	return linked, err
}

// SetLastLogin stamps a successful login.
func (s *Store) SetLastLogin(ctx context.Context, userID string, at time.Time) error {
	_, err := s.update(ctx, "set last login", byID(userID), bson.D{{Key: "last_login_at", Value: at}})
	return err
}

// SetPasswordHash replaces the password hash old (a rehash at the current cost) with hash;
// false when the account no longer has old.
func (s *Store) SetPasswordHash(ctx context.Context, userID, old, hash string, now time.Time) (bool, error) {
	filter := append(byID(userID), bson.E{Key: "password_hash", Value: old})
	return s.update(ctx, "set password hash", filter,
		bson.D{{Key: "password_hash", Value: hash}, {Key: "updated_at", Value: now}})
}

// ReplacePassword sets the account's password hash to hash and raises its session epoch,
// in one update, if its hash is still old (any hash at all when old is empty): every session
// issued before ends at once, and a login that checked the old password and stores its
// session later stores a dead one. It returns the account as written; false when the account
// has no such hash (changed meanwhile, or none).
func (s *Store) ReplacePassword(ctx context.Context, userID, old, hash string, now time.Time) (accounts.User, bool, error) {
	filter := append(byID(userID), bson.E{Key: "password_hash", Value: bson.D{{Key: "$exists", Value: true}, {Key: "$ne", Value: ""}}})
	if old != "" {
		filter = append(byID(userID), bson.E{Key: "password_hash", Value: old})
	}
	update := bson.D{
		{Key: "$set", Value: bson.D{{Key: "password_hash", Value: hash}, {Key: "updated_at", Value: now}}},
		{Key: "$inc", Value: bson.D{{Key: "session_epoch", Value: int64(1)}}},
	}
	var d userDoc
	err := s.users.FindOneAndUpdate(ctx, filter, update, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return accounts.User{}, false, nil
	}
	if err != nil {
		return accounts.User{}, false, fmt.Errorf("replace password: %w", err)
	}
	return fromUserDoc(d), true, nil
}

// SetRole changes the role only if it is still from: a compare-and-set, so that of
// concurrent changes of one role exactly one applies.
func (s *Store) SetRole(ctx context.Context, userID, from, to string, now time.Time) (bool, error) {
	filter := append(byID(userID), bson.E{Key: "role", Value: from})
	return s.update(ctx, "set role", filter, bson.D{{Key: "role", Value: to}, {Key: "updated_at", Value: now}})
}

// Restrict sets the account's status and limit fields r names, whatever they were (the
// end-to-end tests' seam, see authtest); false when no account has userID.
func (s *Store) Restrict(ctx context.Context, userID string, r accounts.Restriction, now time.Time) (bool, error) {
	set := bson.D{{Key: "updated_at", Value: now}}
	if r.Status != "" {
		set = append(set, bson.E{Key: "status", Value: r.Status})
	}
	if r.BanReason != nil {
		set = append(set, bson.E{Key: "ban_reason", Value: *r.BanReason})
	}
	if r.TimeoutUntil != nil {
		set = append(set, bson.E{Key: "timeout_until", Value: r.TimeoutUntil.UTC()})
	}
	if r.TimeoutReason != nil {
		set = append(set, bson.E{Key: "timeout_reason", Value: *r.TimeoutReason})
	}
	if r.QuotaLimit != nil {
		set = append(set, bson.E{Key: "quota_limit", Value: *r.QuotaLimit})
	}
	return s.update(ctx, "restrict account", byID(userID), set)
}

// SetStanding writes the standing to over from in one conditional update: it applies only
// while the account's status, ban reason and timeout are exactly from's (a nil one matching
// an absent field), and removes the fields to leaves nil; updated_at becomes at. Being a
// compare-and-set, the undo of a write (from and to swapped) restores exactly what was there,
// and leaves alone a standing that changed again meanwhile.
func (s *Store) SetStanding(ctx context.Context, userID string, from, to accounts.Standing, at time.Time) (bool, error) {
	// {field: null} matches an absent field as well as a null one.
	filter := append(byID(userID), bson.E{Key: "status", Value: from.Status},
		bson.E{Key: "ban_reason", Value: orNull(from.BanReason)},
		bson.E{Key: "timeout_until", Value: orNull(utc(from.TimeoutUntil))},
		bson.E{Key: "timeout_reason", Value: orNull(from.TimeoutReason)})
	set := bson.D{{Key: "status", Value: to.Status}, {Key: "updated_at", Value: at}}
	var unset bson.D
	for _, f := range []bson.E{{Key: "ban_reason", Value: orNull(to.BanReason)},
		{Key: "timeout_until", Value: orNull(utc(to.TimeoutUntil))}, {Key: "timeout_reason", Value: orNull(to.TimeoutReason)}} {
		if f.Value == nil {
			unset = append(unset, bson.E{Key: f.Key, Value: ""})
		} else {
			set = append(set, f)
		}
	}
	update := bson.D{{Key: "$set", Value: set}}
	if len(unset) > 0 {
		update = append(update, bson.E{Key: "$unset", Value: unset})
	}
	return s.updateOne(ctx, "set standing", filter, update)
}

// orNull is what v points to, or nil (BSON null) when v is nil.
func orNull[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

// update applies $set to the account filter matches and reports whether it did.
func (s *Store) update(ctx context.Context, op string, filter, set bson.D) (bool, error) {
	return s.updateOne(ctx, op, filter, bson.D{{Key: "$set", Value: set}})
}

// updateOne applies update to the account filter matches (by _id) and reports whether it
// did. The server checks the filter and applies the update as one atomic step, so of
// concurrent writers whose filters exclude each other's results exactly one wins, and
// writes of other fields (a login stamp) never undo one another.
func (s *Store) updateOne(ctx context.Context, op string, filter, update bson.D) (bool, error) {
	res, err := s.users.UpdateOne(ctx, filter, update)
	if err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	return res.MatchedCount == 1, nil
}

func fromUserDoc(d userDoc) accounts.User {
	u := accounts.User(d)
	u.CreatedAt, u.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return u
}
