package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// keysOf returns the top-level keys of a JSON object, sorted.
func keysOf(t *testing.T, body string) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestUserAdminEndpoints(t *testing.T) {
	s := boot(t, withBootstrap("root@example.com", "root-password"))
	root, err := s.client.Login(s.anon(t), auth.LoginRequest{Email: "root@example.com", Password: "root-password"})
	if err != nil {
		t.Fatal(err)
	}
	asRoot := s.as(t, identity.Caller{UserID: root.User.ID, Role: "super_admin", Status: "active"})
	mod := register(t, s, "mod@example.com")
	if _, err := s.client.SetRole(asRoot, mod.User.ID, "moderator"); err != nil {
		t.Fatal(err)
	}
	ada := register(t, s, "ada@example.com")
	bob := register(t, s, "bob.b@example.com")
	asMod := s.as(t, identity.Caller{UserID: mod.User.ID, Role: "moderator", Status: "active"})
	asAda := s.as(t, identity.Caller{UserID: ada.User.ID, Role: "user", Status: "active"})

	// The list and the counts, in the contract's shapes.
	resp, body := s.call(t, asMod, "GET", "/internal/auth/users", "")
	if resp.StatusCode != 200 || fmt.Sprint(keysOf(t, body)) != "[page page_size total users]" || strings.Contains(body, "password") {
		t.Fatalf("list = %d %s", resp.StatusCode, body)
	}
	list, err := s.client.Users(asMod, url.Values{})
	if err != nil || list.Total != 4 || len(list.Users) != 4 || list.Page != 1 || list.PageSize != 20 ||
		list.Users[0].Email != "bob.b@example.com" || list.Users[3].Email != "root@example.com" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if l, err := s.client.Users(asMod, url.Values{"q": {"B.B"}}); err != nil || l.Total != 1 || l.Users[0].ID != bob.User.ID {
		t.Fatalf("q B.B = %+v, %v", l, err)
	}
	if l, err := s.client.Users(asMod, url.Values{"q": {"b.*"}}); err != nil || l.Total != 0 || l.Users == nil {
		t.Fatalf("q b.* = %+v, %v", l, err)
	}
	if l, err := s.client.Users(asMod, url.Values{"role": {"moderator"}, "page_size": {"1"}}); err != nil || l.Total != 1 ||
		l.Users[0].ID != mod.User.ID || l.PageSize != 1 {
		t.Fatalf("moderators = %+v, %v", l, err)
	}
	resp, body = s.call(t, asMod, "GET", "/internal/auth/users/counts", "")
	if resp.StatusCode != 200 || body != `{"total":4,"active":4,"suspended":0,"banned":0}` {
		t.Fatalf("counts = %d %s", resp.StatusCode, body)
	}
	for q, msg := range map[string]string{
		"role=admin": "role must be one of user, moderator, super_admin", "status=gone": "status must be one of active, suspended, banned",
		"q=%FF": "q must be valid text of at most 254 characters", "q=%00": "q must not contain control characters",
		"q=" + strings.Repeat("a", 255): "q must be valid text of at most 254 characters",
		"page=0":                        "page must be a positive integer", "page_size=101": "page_size must be between 1 and 100",
	} {
		resp, body := s.call(t, asMod, "GET", "/internal/auth/users?"+q, "")
		wantFailure(t, resp, body, 400, msg)
	}
	for _, path := range []string{"/internal/auth/users", "/internal/auth/users/counts"} {
		resp, body := s.call(t, asAda, "GET", path, "")
		wantFailure(t, resp, body, 403, "moderator role required")
	}

	// A timeout: validation first, then the rank rules, then the write.
	timeoutPath := "/internal/auth/users/" + ada.User.ID + "/timeout"
	for b, msg := range map[string]string{
		``:                                       "request body is required",
		`{"duration_seconds":`:                   "request body is not valid JSON",
		`{}`:                                     "duration_seconds is required",
		`{"duration_seconds":null,"reason":"x"}`: "duration_seconds is required",
		`{"duration_seconds":29,"reason":"x"}`:   "duration_seconds must be between 30 and 604800",
		`{"duration_seconds":604801,"reason":"x"}`:                             "duration_seconds must be between 30 and 604800",
		`{"duration_seconds":"60","reason":"x"}`:                               "duration_seconds must be an integer",
		`{"duration_seconds":60.5,"reason":"x"}`:                               "duration_seconds must be an integer",
		`{"duration_seconds":1e40,"reason":"x"}`:                               "duration_seconds must be an integer",
		`{"duration_seconds":60}`:                                              "reason is required",
		`{"duration_seconds":60,"reason":"  "}`:                                "reason is required",
		`{"duration_seconds":60,"reason":5}`:                                   "reason must be a string",
		`{"duration_seconds":60,"reason":"` + strings.Repeat("x", 2001) + `"}`: "reason must be valid text of at most 2000 characters",
	} {
		resp, body := s.call(t, asMod, "POST", timeoutPath, b)
		wantFailure(t, resp, body, 400, msg)
	}
	valid := `{"duration_seconds":600,"reason":"cool off"}`
	for _, tc := range []struct {
		as     context.Context
		target string
		status int
		msg    string
	}{
		{asAda, bob.User.ID, 403, "moderator role required"},
		{asMod, mod.User.ID, 400, "you cannot act on your own account"},
		{asMod, "no-such-user", 404, "user not found"},
		{asMod, root.User.ID, 403, "you cannot act on a user of equal or higher rank"},
	} {
		for _, action := range []string{"timeout", "ban", "unban"} {
			resp, body := s.call(t, tc.as, "POST", "/internal/auth/users/"+tc.target+"/"+action, valid)
			wantFailure(t, resp, body, tc.status, tc.msg)
		}
	}
	if n := len(s.peers.audit()); n != 1 { // the role change of the set-up
		t.Fatalf("refusals wrote audit entries: %d", n)
	}
	before := time.Now()
	u, err := s.client.Timeout(asMod, ada.User.ID, auth.TimeoutRequest{DurationSeconds: ptr[int64](600), Reason: ptr(" cool off ")})
	if err != nil || u.Status != "suspended" || u.TimeoutUntil == nil || u.TimeoutUntil.Before(before.Add(599*time.Second)) ||
		u.TimeoutUntil.After(time.Now().Add(600*time.Second)) || *u.TimeoutReason != "cool off" {
		t.Fatalf("timeout = %+v, %v", u, err)
	}
	if v, err := userOf(s.client.Validate(s.anon(t), ada.Token)); err != nil || v.Status != "suspended" {
		t.Fatalf("ada's session after the timeout = %+v, %v", v, err)
	}

	// A ban that takes the links with it, and one without.
	s.peers.set(func(p *peers) { p.enabled[bob.User.ID] = 3 })
	resp, body = s.call(t, asMod, "POST", "/internal/auth/users/"+bob.User.ID+"/ban", `{"reason":"phishing","deactivate_links":true}`)
	var banned auth.BanResponse
	if resp.StatusCode != 200 || fmt.Sprint(keysOf(t, body)) != "[links_disabled user]" || json.Unmarshal([]byte(body), &banned) != nil ||
		banned.LinksDisabled != 3 || banned.User.Status != "banned" || *banned.User.BanReason != "phishing" {
		t.Fatalf("ban = %d %s", resp.StatusCode, body)
	}
	res, err := s.client.Ban(asMod, ada.User.ID, auth.BanRequest{Reason: ptr("spam")})
	if err != nil || res.LinksDisabled != 0 || res.User.Status != "banned" || res.User.TimeoutUntil == nil {
		t.Fatalf("ban without links = %+v, %v", res, err)
	}
	if d := s.peers.disables(); fmt.Sprint(d) != fmt.Sprint([]string{bob.User.ID}) {
		t.Fatalf("link disables = %v", d)
	}
	for b, msg := range map[string]string{`{}`: "reason is required", `{"reason":"x","deactivate_links":"yes"}`: "deactivate_links must be a boolean", ``: "request body is required"} {
		resp, body := s.call(t, asMod, "POST", "/internal/auth/users/"+bob.User.ID+"/ban", b)
		wantFailure(t, resp, body, 400, msg)
	}
	_, err = s.client.Timeout(asMod, ada.User.ID, auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr("x")})
	wantErr(t, err, errs.KindConflict, "user is banned")
	if n, err := s.client.UserCounts(asMod); err != nil || n != (auth.UserCounts{Total: 4, Active: 2, Suspended: 0, Banned: 2}) {
		t.Fatalf("counts = %+v, %v", n, err)
	}

	// Unban with no body, with {} and with a body that is not JSON.
	resp, body = s.call(t, asMod, "POST", "/internal/auth/users/"+bob.User.ID+"/unban", "")
	if resp.StatusCode != 200 || !strings.Contains(body, `"status":"active"`) || strings.Contains(body, "ban_reason\":\"") {
		t.Fatalf("unban = %d %s", resp.StatusCode, body)
	}
	if u, err := s.client.Unban(asMod, ada.User.ID); err != nil || u.Status != "active" || u.TimeoutUntil != nil || u.BanReason != nil {
		t.Fatalf("unban = %+v, %v", u, err)
	}
	resp, body = s.call(t, asMod, "POST", "/internal/auth/users/"+ada.User.ID+"/unban", "{}")
	if resp.StatusCode != 200 {
		t.Fatalf("unban with {} = %d %s", resp.StatusCode, body)
	}
	resp, body = s.call(t, asMod, "POST", "/internal/auth/users/"+ada.User.ID+"/unban", "nope")
	wantFailure(t, resp, body, 400, "request body is not valid JSON")
	doc := s.userDoc(t, bson.D{{Key: "_id", Value: ada.User.ID}})
	for _, f := range []string{"ban_reason", "timeout_until", "timeout_reason"} {
		if _, ok := doc[f]; ok || doc["status"] != "active" {
			t.Fatalf("after the unban: %v", doc)
		}
	}

	// Every action is in the audit log, with the moderator as its actor.
	var got []string
	for _, e := range s.peers.audit()[1:] {
		got = append(got, e.Action+" "+e.TargetID)
		if e.ActorID != mod.User.ID || e.IPHash != clientIP || e.TargetType != "user" || e.Detail == nil {
			t.Fatalf("audit entry = %+v", e)
		}
	}
	want := []string{"user.timeout " + ada.User.ID, "user.ban " + bob.User.ID, "user.ban " + ada.User.ID,
		"user.unban " + bob.User.ID, "user.unban " + ada.User.ID}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit = %q; want %q", got, want)
	}

	// Without its audit entry, an action does not stand; a ban whose links cannot be
	// disabled does, and says so.
	s.peers.set(func(p *peers) { p.auditDown = true })
	beforeDoc := fmt.Sprint(map[string]any(s.userDoc(t, bson.D{{Key: "_id", Value: ada.User.ID}})))
	_, err = s.client.Ban(asMod, ada.User.ID, auth.BanRequest{Reason: ptr("spam"), DeactivateLinks: ptr(true)})
	wantErr(t, err, errs.KindUnavailable, "mongodb unavailable")
	if after := fmt.Sprint(map[string]any(s.userDoc(t, bson.D{{Key: "_id", Value: ada.User.ID}}))); after != beforeDoc {
		t.Fatalf("ban stood without its entry:\n got %s\nwant %s", after, beforeDoc)
	}
	s.peers.set(func(p *peers) { p.auditDown, p.linksDown = false, true })
	_, err = s.client.Ban(asMod, ada.User.ID, auth.BanRequest{Reason: ptr("spam"), DeactivateLinks: ptr(true)})
	wantErr(t, err, errs.KindUnavailable, "the user is banned, but their links could not be disabled; ban again to retry")
	if doc := s.userDoc(t, bson.D{{Key: "_id", Value: ada.User.ID}}); doc["status"] != "banned" {
		t.Fatalf("the ban did not stand: %v", doc)
	}
}

func ptr[T any](v T) *T { return &v }
