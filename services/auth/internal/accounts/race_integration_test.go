package accounts_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// Sixteen admin actions on one account at once, over two replicas: bans with different
// reasons and promotions to moderator. Each either stands with its audit entry or answers
// 409 and leaves nothing; the account ends with one of the standing bans' reasons and the
// one promotion that won.
func TestConcurrentAdminActionsOnOneAccount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	replicas := []*accounts.Service{e.svc, e.service(t)}
	admin := e.superAdmin(t, "admin@example.com")
	as := caller(admin.ID, auth.RoleSuperAdmin)
	for round := range 3 {
		target := e.register(t, fmt.Sprintf("target%d@example.com", round))
		bansBefore, rolesBefore := len(e.audit.byAction(moderation.AuditUserBan)), len(roleChanges(e))
		var mu sync.Mutex
		var banned []string
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				svc := replicas[i%2]
				<-start
				var err error
				if i%2 == 0 {
					reason := fmt.Sprintf("reason %d", i)
					_, err = svc.Ban(ctx, as, target.ID, auth.BanRequest{Reason: &reason})
					if err == nil {
						mu.Lock()
						banned = append(banned, reason)
						mu.Unlock()
					}
				} else {
					_, err = svc.SetRole(ctx, as, target.ID, auth.RoleModerator)
				}
				if err != nil && !errs.IsKind(err, errs.KindConflict) {
					t.Errorf("round %d, action %d: %v", round, i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		var recorded []string
		for _, a := range e.audit.byAction(moderation.AuditUserBan)[bansBefore:] {
			recorded = append(recorded, a.Detail["reason"].(string))
		}
		slices.Sort(banned)
		slices.Sort(recorded)
		if len(banned) == 0 || !slices.Equal(banned, recorded) {
			t.Fatalf("round %d: bans that stood %v, recorded %v; want the same, at least one", round, banned, recorded)
		}
		roles := roleChanges(e)[rolesBefore:]
		if len(roles) != 1 || fmt.Sprint(roles[0].Detail) != "map[from:user to:moderator]" {
			t.Fatalf("round %d: role entries %+v; want the one promotion", round, roles)
		}
		u, err := e.store.UserByID(ctx, target.ID)
		if err != nil || u.Status != auth.StatusBanned || u.BanReason == nil || !slices.Contains(banned, *u.BanReason) ||
			u.Role != auth.RoleModerator {
			t.Fatalf("round %d: account %+v, %v; want a moderator banned for one of %v", round, u, err, banned)
		}
	}
}
