package app_test

import (
	"fmt"
	"net/url"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

func TestRoleAndLoginRecordEndpoints(t *testing.T) {
	s := boot(t, withBootstrap("root@example.com", "root-password"))
	root, err := s.client.Login(s.anon(t), auth.LoginRequest{Email: "root@example.com", Password: "root-password"})
	if err != nil || root.User.Role != "super_admin" {
		t.Fatalf("bootstrap admin login = %+v, %v", root, err)
	}
	ada := register(t, s, "ada@example.com")
	_, _ = s.client.Login(s.anon(t), auth.LoginRequest{Email: "ada@example.com", Password: "wrong-horse"})
	asRoot := s.as(t, identity.Caller{UserID: root.User.ID, Role: "super_admin", Status: "active"})
	asAda := s.as(t, identity.Caller{UserID: ada.User.ID, Role: "user", Status: "active"})

	u, err := s.client.SetRole(asRoot, ada.User.ID, "moderator")
	if err != nil || u.Role != "moderator" || !u.UpdatedAt.After(ada.User.UpdatedAt) {
		t.Fatalf("SetRole = %+v, %v", u, err)
	}
	_, err = s.client.SetRole(asAda, root.User.ID, "user")
	wantErr(t, err, errs.KindForbidden, "super admin role required")
	_, err = s.client.SetRole(asRoot, ada.User.ID, "owner")
	wantErr(t, err, errs.KindInvalid, "role must be one of user, moderator, super_admin")
	_, err = s.client.SetRole(asRoot, root.User.ID, "user")
	wantErr(t, err, errs.KindInvalid, "you cannot change your own role")
	_, err = s.client.SetRole(asRoot, "no-such-id", "user")
	wantErr(t, err, errs.KindNotFound, "user not found")
	// One audit entry, the moderation service naming the actor from the forwarded token.
	if rc := s.peers.audit(); len(rc) != 1 || rc[0].Action != "user.role" || rc[0].TargetType != "user" ||
		rc[0].TargetID != ada.User.ID || rc[0].ActorID != root.User.ID || rc[0].IPHash != clientIP ||
		fmt.Sprint(rc[0].Detail) != "map[from:user to:moderator]" || rc[0].ID == "" {
		t.Fatalf("role change audit entries = %+v", rc)
	}
	// Without its audit entry, a role change does not stand.
	s.peers.set(func(p *peers) { p.auditDown = true })
	_, err = s.client.SetRole(asRoot, ada.User.ID, "user")
	wantErr(t, err, errs.KindUnavailable, "mongodb unavailable")
	if doc := s.userDoc(t, bson.D{{Key: "_id", Value: ada.User.ID}}); doc["role"] != "moderator" {
		t.Fatalf("role %v stood without an audit entry", doc["role"])
	}
	s.peers.set(func(p *peers) { p.auditDown = false })

	all, err := s.client.LoginRecords(asRoot, url.Values{})
	// root's login, ada's registration (which logged her in), ada's wrong password.
	if err != nil || all.Total != 3 || len(all.Records) != 3 || all.Page != 1 || all.PageSize != 20 {
		t.Fatalf("all records = %+v, %v", all, err)
	}
	if r := all.Records[0]; r.Email != "ada@example.com" || r.Success || r.Method != "password" || r.Reason != "wrong_password" ||
		r.IPHash != clientIP || r.UserAgent != "component-test/1.0" || r.UserID != ada.User.ID {
		t.Fatalf("newest record = %+v", r)
	}
	if r := all.Records[1]; r.UserID != ada.User.ID || !r.Success || r.Reason != "registered" || r.IPHash != clientIP {
		t.Fatalf("registration record = %+v", r)
	}
	ok, err := s.client.LoginRecords(asRoot, url.Values{"success": {"true"}, "email": {"ROOT@example.com"}, "page_size": {"1"}})
	if err != nil || ok.Total != 1 || ok.Records[0].UserID != root.User.ID || ok.PageSize != 1 {
		t.Fatalf("filtered records = %+v, %v", ok, err)
	}
	_, err = s.client.LoginRecords(asAda, url.Values{})
	wantErr(t, err, errs.KindForbidden, "super admin role required")
	for q, msg := range map[string]string{
		"page=0": "page must be a positive integer", "page_size=101": "page_size must be between 1 and 100",
		"success=maybe": "success must be true or false",
	} {
		resp, body := s.call(t, asRoot, "GET", "/internal/auth/login-records?"+q, "")
		wantFailure(t, resp, body, 400, msg)
	}
}
