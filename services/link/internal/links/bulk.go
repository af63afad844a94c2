package links

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
	"github.com/linkmesh/linkmesh/pkg/server"
)

// bulkLookups bounds the destination lookups of one bulk creation that run at once: 100
// lookups of at most 2 s each fit the creation budget in four rounds.
const bulkLookups = 25

// bulkItem is one item of a bulk creation on its way through the steps.
type bulkItem struct {
	req  link.CreateRequest
	link Link
	unit *quota.ReleaseRequest
}

// Bulk creates up to link.MaxBulk links for caller, each checked as one Create would check
// it, with one reservation of the caller's quota for all the items that pass their checks
// and one insert for all of them: the cost of a bulk creation grows with its destination
// lookups (concurrent), not with round trips per item. Results come in request order, each
// with the status one Create would have answered. Once the quota is spent the remaining
// items get 429.
//
// An Idempotency-Key covers the whole request: each item's link gets an id derived from the
// caller, the key and its index, so a retry answers the items created the first time with
// their links (without another unit) and goes on with the others; a retry with another body
// is 422.
func (s *Service) Bulk(ctx context.Context, caller identity.Caller, req link.BulkRequest) (link.BulkResponse, error) {
	if caller.IsAnonymous() {
		return link.BulkResponse{}, errs.Forbidden("bulk creation requires an account")
	}
	if caller.EmailUnverified {
		return link.BulkResponse{}, errs.Forbidden(link.MsgVerifyEmail)
	}
	if req.Links == nil || len(*req.Links) < 1 || len(*req.Links) > link.MaxBulk {
		return link.BulkResponse{}, errs.Invalid("links must hold between 1 and %d items", link.MaxBulk)
	}
	if req.IdempotencyKey != "" {
		if err := server.CheckIdempotencyKey(req.IdempotencyKey); err != nil {
			return link.BulkResponse{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, link.CreateBudget)
	defer cancel()
	items := *req.Links
	out := link.BulkResponse{Results: make([]link.BulkResult, len(items))}
	work := make([]*bulkItem, len(items))
	request := bulkFingerprint(req)
	for i, it := range items {
		out.Results[i].Index = i
		cr := link.CreateRequest{URL: it.URL, ExpirationDays: it.ExpirationDays, CustomCode: it.CustomCode}
		l, err := s.newLink(caller, cr)
		if err != nil {
			out.Results[i] = failed(i, err)
			continue
		}
		if req.IdempotencyKey != "" {
			l.ID = idempotentID(caller, req.IdempotencyKey+"\x00bulk\x00"+strconv.Itoa(i))
			l.Request = request + ":" + strconv.Itoa(i)
		}
		work[i] = &bulkItem{req: cr, link: l}
	}
	if req.IdempotencyKey != "" {
		if err := s.replayBulk(ctx, work, &out); err != nil {
			return link.BulkResponse{}, err
		}
	}
	s.checkDestinations(ctx, work, &out)

	var window ratelimit.Window
	var err error
	if window, err = s.reserveBulk(ctx, caller, work, &out); err != nil {
		return link.BulkResponse{}, err
	}
	released, err := s.insertBulk(ctx, work, &out)
	if err != nil {
		return link.BulkResponse{}, err
	}
	if window.Name != "" {
		window.Remaining += released
	} else {
		window = s.usage(ctx, caller) // no item reached the reservation
	}
	if window.Name != "" {
		out.Quota = &window
	}
	return out, nil
}

// failed is the result of item i that err refused.
func failed(i int, err error) link.BulkResult {
	status, msg, _ := errs.Response(err)
	return link.BulkResult{Index: i, Status: status, Error: msg}
}

// bulkFingerprint identifies a bulk request by what it asks for.
func bulkFingerprint(req link.BulkRequest) string {
	req.IdempotencyKey = ""
	b, _ := json.Marshal(req) // strings, ints and pointers to them always marshal
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// replayBulk answers the items an earlier attempt with the same key created: their links,
// done. Another body under the key is 422 for the whole request.
func (s *Service) replayBulk(ctx context.Context, work []*bulkItem, out *link.BulkResponse) error {
	for i, w := range work {
		if w == nil {
			continue
		}
		prev, found, err := s.replay(ctx, w.link.ID, w.link.Request)
		switch {
		case err != nil && (errs.IsKind(err, errs.KindUnprocessable) || !found):
			return storeError(err) // another body under the key, or the store failing
		case !found:
			continue
		}
		work[i] = nil
		if err != nil {
			out.Results[i] = failed(i, err)
			continue
		}
		s.created(out, i, prev)
	}
	return nil
}

// checkDestinations checks the items' destinations, bulkLookups at a time.
func (s *Service) checkDestinations(ctx context.Context, work []*bulkItem, out *link.BulkResponse) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, bulkLookups)
	refused := make([]error, len(work))
	for i, w := range work {
		if w == nil {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := s.urls.Check(ctx, w.req.URL); err != nil {
				refused[i] = errs.Invalid("%s", err.Error())
			}
		})
	}
	wg.Wait()
	for i, err := range refused {
		if err != nil {
			out.Results[i] = failed(i, err)
			work[i] = nil
		}
	}
}

// reserveBulk takes one unit of caller's creation quota per remaining item in one
// reservation; the items it found no room for, the last ones, get 429.
func (s *Service) reserveBulk(ctx context.Context, caller identity.Caller, work []*bulkItem, out *link.BulkResponse) (ratelimit.Window, error) {
	var want []int
	for i, w := range work {
		if w != nil {
			want = append(want, i)
		}
	}
	if len(want) == 0 {
		return ratelimit.Window{}, nil
	}
	req := quota.ReserveRequest{Scope: quota.ScopeUserCreate, Key: caller.UserID, Limit: &caller.QuotaLimit, Count: len(want)}
	res, err := s.quota.Reserve(ctx, req)
	if err != nil {
		if e, ok := errs.As(err); ok && e.Kind == errs.KindUnavailable {
			return ratelimit.Window{}, err
		}
		return ratelimit.Window{}, errs.Unavailable("quota service unavailable", err)
	}
	window := res.Window(CreatePolicy, s.now())
	for n, i := range want {
		if n < len(res.IDs) {
			work[i].unit = &quota.ReleaseRequest{Scope: req.Scope, Key: req.Key, ID: res.IDs[n]}
			continue
		}
		out.Results[i] = link.BulkResult{Index: i, Status: http.StatusTooManyRequests, Error: msgUserQuota}
		work[i] = nil
	}
	return window, nil
}

// insertBulk stores the items that hold a unit in one insert, then settles the few it
// could not store one by one (a generated code that collided gets another; a taken custom
// code is 409) and gives back the units of the items that failed. It returns how many
// units it gave back.
func (s *Service) insertBulk(ctx context.Context, work []*bulkItem, out *link.BulkResponse) (int, error) {
	var idx []int
	var batch []Link
	for i, w := range work {
		if w == nil {
			continue
		}
		l := w.link
		if w.req.CustomCode != nil {
			l.ShortCode = *w.req.CustomCode
		} else {
			code, err := s.newCode()
			if err != nil {
				return 0, err
			}
			l.ShortCode = code
		}
		idx, batch = append(idx, i), append(batch, l)
	}
	if len(batch) == 0 {
		return 0, nil
	}
	outcomes, err := s.store.InsertEach(ctx, batch)
	if err != nil {
		// Some may be stored all the same (a timeout after the write): those keep their
		// units, the others give theirs back; a retry with the same Idempotency-Key finds
		// whatever was stored.
		ids := make([]string, len(batch))
		for n, l := range batch {
			ids[n] = l.ID
		}
		stored, serr := s.store.ExistingIDs(context.WithoutCancel(ctx), ids)
		if serr != nil {
			s.log.ErrorContext(ctx, "find the links of a failed bulk insert; their units stay taken", "err", serr)
			return 0, storeError(err)
		}
		for n, i := range idx {
			if !stored[batch[n].ID] {
				s.release(ctx, unit{release: work[i].unit})
			}
		}
		return 0, storeError(err)
	}
	released := 0
	for n, i := range idx {
		l, err := batch[n], outcomes[n]
		if errors.Is(err, ErrCodeTaken) {
			// Settle it as one Create would: a fresh code, or 409, or a concurrent attempt
			// with the same key that stored it first.
			l, err = s.insert(ctx, work[i].link, work[i].req.CustomCode)
			if errors.Is(err, errSameKey) {
				// A concurrent request with the same key stored it, with its own unit.
				s.release(ctx, unit{release: work[i].unit})
				released++
				if l, _, err = s.replay(ctx, work[i].link.ID, work[i].link.Request); err == nil {
					s.created(out, i, l)
					continue
				}
				out.Results[i] = failed(i, err)
				continue
			}
		}
		if err != nil {
			s.release(ctx, unit{release: work[i].unit})
			released++
			out.Results[i] = failed(i, err)
			continue
		}
		s.cache.Created(ctx, l.ShortCode)
		s.created(out, i, l)
	}
	return released, nil
}

// created records item i's link as its result.
func (s *Service) created(out *link.BulkResponse, i int, l Link) {
	v := s.view(l)
	v.OwnerID = ""
	out.Results[i] = link.BulkResult{Index: i, Status: http.StatusCreated, Link: &v}
}
