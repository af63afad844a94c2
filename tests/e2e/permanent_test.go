package e2e

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The permanent-link flow through the gateway: the owner asks (once), a moderator approves,
// and the expired link answers 302 again because it now renews itself.
func TestPermanentRequests(t *testing.T) {
	a, b := register(t), register(t)
	root := admin(t)
	r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/forever"}`)
	code := r.object(t)["short_code"].(string)

	// Ten concurrent attempts: exactly one pending request.
	var wg sync.WaitGroup
	statuses := make([]int, 10)
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = as(t, a.cookie, "POST", "/api/user/links/"+code+"/request-permanent", `{"reason":"docs"}`).status
		})
	}
	wg.Wait()
	created, conflicts := 0, 0
	for _, s := range statuses {
		switch s {
		case 201:
			created++
		case 409:
			conflicts++
		}
	}
	if created != 1 || conflicts != 9 {
		t.Fatalf("statuses %v; want one 201 and nine 409", statuses)
	}
	as(t, b.cookie, "POST", "/api/user/links/"+code+"/request-permanent", "").wantError(t, 404, "short link not found")
	as(t, a.cookie, "GET", "/api/admin/permanent-requests", "").wantError(t, 403, "moderator role required")

	list := as(t, root, "GET", "/api/admin/permanent-requests?status=pending&page_size=100", "")
	var id string
	reqs, _ := list.object(t)["requests"].([]any)
	for _, x := range reqs {
		if m := x.(map[string]any); m["short_code"] == code {
			if m["status"] != "pending" || m["reason"] != "docs" {
				t.Fatalf("pending request: %v", m)
			}
			id = m["id"].(string)
		}
	}
	if list.status != 200 || id == "" {
		t.Fatalf("the pending request is not listed: %d %s", list.status, list.body)
	}
	as(t, root, "GET", "/api/admin/permanent-requests?status=open", "").wantError(t, 400, "status must be pending, approved, rejected or all")
	as(t, root, "POST", "/api/admin/permanent-requests/"+id+"/resolve", `{"action":"keep"}`).wantError(t, 400, "action must be approve or reject")

	setLinkExpired(t, code)
	eventually(t, code, 410)
	r = as(t, root, "POST", "/api/admin/permanent-requests/"+id+"/resolve", `{"action":"approve","note":"fine"}`)
	got, _ := r.object(t)["request"].(map[string]any)
	if r.status != 200 || got["status"] != "approved" || got["resolution_note"] != "fine" || got["resolved_at"] == nil {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	eventually(t, code, 302)
	if info := do(t, "GET", "/api/links/"+code+"/info", "", ""); info.object(t)["auto_renew"] != true || info.object(t)["expired"] != false {
		t.Fatalf("info after approval: %s", info.body)
	}
	as(t, root, "POST", "/api/admin/permanent-requests/"+id+"/resolve", `{"action":"reject"}`).wantError(t, 409, "permanent request already resolved")
	as(t, a.cookie, "POST", "/api/user/links/"+code+"/request-permanent", "").wantError(t, 409, "link already auto-renews")
}

// An approval acts on the link the request was filed for: once that link is purged and its
// code names another owner's link, approving answers 409, the new link stays as it is, and
// the request can still be rejected.
func TestPermanentApprovalOfAPurgedLink(t *testing.T) {
	a, b := register(t), register(t)
	root := admin(t)
	code := "perm-" + strconv.Itoa(accountCounter) + "-" + dbPrefix[len(dbPrefix)-6:]
	if r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/a","custom_code":"`+code+`"}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	r := as(t, a.cookie, "POST", "/api/user/links/"+code+"/request-permanent", `{"reason":"keep"}`)
	id, _ := r.object(t)["request"].(map[string]any)["id"].(string)
	if r.status != 201 || id == "" {
		t.Fatalf("request: %d %s", r.status, r.body)
	}
	// The purge removes the link for good (as the purge sweeper does), and b takes the code.
	if _, err := serviceDB(t, "link").Collection("links").DeleteOne(context.Background(), bson.D{{Key: "short_code", Value: code}}); err != nil {
		t.Fatal(err)
	}
	if r := as(t, b.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/b","custom_code":"`+code+`"}`); r.status != 201 {
		t.Fatalf("b takes the code: %d %s", r.status, r.body)
	}
	as(t, root, "POST", "/api/admin/permanent-requests/"+id+"/resolve", `{"action":"approve"}`).
		wantError(t, 409, "the link of this request no longer exists")
	if info := do(t, "GET", "/api/links/"+code+"/info", "", "").object(t); info["auto_renew"] != false || info["destination_url"] != "https://93.184.216.34/b" {
		t.Fatalf("b's link after the refused approval: %v", info)
	}
	if r := as(t, root, "POST", "/api/admin/permanent-requests/"+id+"/resolve", `{"action":"reject"}`); r.status != 200 {
		t.Fatalf("reject after the refused approval: %d %s", r.status, r.body)
	}
}
