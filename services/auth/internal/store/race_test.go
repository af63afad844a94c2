package store

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// racers is how many writers change one account at once.
const racers = 16

// Writers that all read the account in one state and change its role or its standing from
// that state: the server lets exactly one of each kind win, the account shows exactly the
// winners' changes, and login stamps racing them undo neither.
func TestConcurrentChangesFromOneState(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for round := range 5 {
		id := fmt.Sprintf("race%d", round)
		if err := s.InsertUser(ctx, user(id, id+"@example.com")); err != nil {
			t.Fatal(err)
		}
		active := accounts.Standing{Status: auth.StatusActive}
		var roleWinner, standingWinner atomic.Int32
		roleWinner.Store(-1)
		standingWinner.Store(-1)
		var roleWins, standingWins atomic.Int32
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				if err := s.SetLastLogin(ctx, id, time.Now()); err != nil {
					t.Error(err)
				}
				var ok bool
				var err error
				if i%2 == 0 {
					ok, err = s.SetRole(ctx, id, auth.RoleUser, roleFor(i), time.Now())
					if ok {
						roleWins.Add(1)
						roleWinner.Store(int32(i))
					}
				} else {
					reason := "r" + strconv.Itoa(i)
					ok, err = s.SetStanding(ctx, id, active, accounts.Standing{Status: auth.StatusBanned, BanReason: &reason}, time.Now())
					if ok {
						standingWins.Add(1)
						standingWinner.Store(int32(i))
					}
				}
				if err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if roleWins.Load() != 1 || standingWins.Load() != 1 {
			t.Fatalf("round %d: %d role changes and %d standing changes won; want 1 and 1", round, roleWins.Load(), standingWins.Load())
		}
		u, err := s.UserByID(ctx, id)
		want := "r" + strconv.Itoa(int(standingWinner.Load()))
		if err != nil || u.Role != roleFor(int(roleWinner.Load())) || u.Status != auth.StatusBanned || u.BanReason == nil ||
			*u.BanReason != want || u.LastLoginAt == nil {
			t.Fatalf("round %d: account %+v, %v; want role %s, banned for %s, a login stamp", round, u, err,
				roleFor(int(roleWinner.Load())), want)
		}
	}
}

func roleFor(i int) string {
	if i%4 == 0 {
		return auth.RoleModerator
	}
	return auth.RoleSuperAdmin
}

// Writers that each read the account and write a change computed from what they read, over
// and over: every success builds on the one before, so the account counts exactly the
// successes (a lost update would count fewer).
func TestConcurrentReadModifyWriteLosesNothing(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const id, attempts = "counted", 8
	if err := s.InsertUser(ctx, user(id, "counted@example.com")); err != nil {
		t.Fatal(err)
	}
	var standingWins, roleWins, conflicts atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			for range attempts {
				u, err := s.UserByID(ctx, id)
				if err != nil {
					t.Error(err)
					return
				}
				var ok bool
				if i%2 == 0 {
					// The timeout reason counts the standing changes.
					n := 0
					if u.TimeoutReason != nil {
						n, _ = strconv.Atoi(*u.TimeoutReason)
					}
					to := u.Standing()
					next, until := strconv.Itoa(n+1), ms(time.Now().Add(time.Hour))
					to.TimeoutReason, to.TimeoutUntil = &next, &until
					ok, err = s.SetStanding(ctx, id, u.Standing(), to, time.Now())
					if ok {
						standingWins.Add(1)
					}
				} else {
					to := auth.RoleModerator
					if u.Role == auth.RoleModerator {
						to = auth.RoleUser
					}
					ok, err = s.SetRole(ctx, id, u.Role, to, time.Now())
					if ok {
						roleWins.Add(1)
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					conflicts.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	u, err := s.UserByID(ctx, id)
	if err != nil || u.TimeoutReason == nil {
		t.Fatalf("account %+v, %v", u, err)
	}
	wantRole := auth.RoleUser
	if roleWins.Load()%2 == 1 {
		wantRole = auth.RoleModerator
	}
	t.Logf("%d standing and %d role changes won, %d lost", standingWins.Load(), roleWins.Load(), conflicts.Load())
	if *u.TimeoutReason != strconv.Itoa(int(standingWins.Load())) || u.Role != wantRole || u.Status != auth.StatusActive {
		t.Fatalf("account counts %s standing changes and has role %s; want %d and %s (%d role changes)",
			*u.TimeoutReason, u.Role, standingWins.Load(), wantRole, roleWins.Load())
	}
	if standingWins.Load() == 0 || roleWins.Load() == 0 ||
		standingWins.Load()+roleWins.Load()+conflicts.Load() != racers*attempts {
		t.Fatalf("%d + %d wins and %d conflicts of %d attempts", standingWins.Load(), roleWins.Load(), conflicts.Load(), racers*attempts)
	}
}

// Accounts linked at once to one identity provider subject: the unique idp_uid index lets
// exactly one take it, and accounts without a subject are never in each other's way.
func TestOneAccountPerSubject(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for i := range racers {
		id := fmt.Sprintf("sub%d", i)
		if err := s.InsertUser(ctx, user(id, id+"@example.com")); err != nil {
			t.Fatalf("account %d without a subject: %v", i, err)
		}
	}
	var wins atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			linked, err := s.LinkIDP(ctx, fmt.Sprintf("sub%d", i), "google-subject-1", time.Now())
			if err != nil {
				t.Error(err)
			}
			if linked {
				wins.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d accounts linked to one subject, want 1", wins.Load())
	}
	u, err := s.UserByIDPUID(ctx, "google-subject-1")
	if err != nil || u.IDPUID != "google-subject-1" {
		t.Fatalf("the linked account: %+v, %v", u, err)
	}
}
