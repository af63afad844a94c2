package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// Owner packs: each owner's links, packed for the owner's lists, counts and dashboard.
//
// FerretDB v1 filters, sorts and counts in its own process, after turning every document an
// equality read returns into its own document type (~60 µs for a link), and pushes nothing
// else down: an owner's list read all of the owner's links, 1.4 s for 20,000. So the fold
// keeps each owner's links packed a few thousand to a document, compressed, and the owner's
// views read those and the owner's changes not folded yet: two equality reads that return
// a handful of documents whatever the number of links.
//
//   - every recorded change of an owned link carries the link as the write leaves it (its
//     entry), under the change's revision;
//   - the fold writes a batch's entries into their owners' packs before it deletes the
//     changes, keeping for each link the entry of its highest revision: a batch applied
//     twice (a crash half way) changes nothing the second time, and a change settled late
//     never undoes a later one; a link being purged stays as a mark, so no late change of it
//     brings it back;
//   - a view reads the owner's done changes first, then the packs, and keeps each link's
//     highest revision: a change folded between the two reads is in the packs by then;
//   - links stored before the packs existed are packed once, by the fold (packsReady marks
//     it done); until then the views read the links. A link whose insert's change was never
//     recorded (the process died between the two writes, see Insert) is missing from its
//     owner's packs until its next change.
const (
	packsCollection = "link_packs"
	// packsReady is the document of the counts collection that says every link stored
	// before the packs existed is packed.
	packsReady = "packs"
)

// packSize is how many links one pack document holds: a fold rewrites the packs it changes
// whole, so an owner's new links cost the rewrite of one pack of at most this many (~100
// bytes each before compression). Tests make it smaller.
var packSize = 2000

// packDoc is a stored pack: the owner's seq-th, at version v (every write is conditional on
// it), its entries compressed.
type packDoc struct {
	ID      string `bson:"_id"`
	OwnerID string `bson:"owner_id"`
	Seq     int    `bson:"seq"`
	V       int64  `bson:"v"`
	Data    []byte `bson:"data"`
}

// pack is a pack read back: its links, purge marks included.
type pack struct {
	doc   packDoc
	links []packed
	dirty bool
}

// packed is a link in a pack; gone marks a link being purged, kept so that no late change
// of it brings it back.
type packed struct {
	links.Link
	gone bool
}

var (
	// zstd's encoder and decoder are safe for concurrent EncodeAll and DecodeAll calls.
	packEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	packDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(64<<20))
)

const (
	flagAutoRenew = 1 << iota
	flagDeleted
	flagGone
)

// appendEntry appends l's entry: what an owner's view shows of it, and its revision.
func appendEntry(b []byte, l links.Link) []byte {
	for _, s := range []string{l.ID, l.ShortCode, l.DestinationURL, l.Status} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	var flags byte
	if l.AutoRenew {
		flags |= flagAutoRenew
	}
	if l.DeletedAt != nil {
		flags |= flagDeleted
	}
	if l.Purge != nil {
		flags |= flagGone
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, l.CreatedAt.UnixMilli())
	b = binary.AppendVarint(b, l.ExpiresAt.UnixMilli())
	if l.DeletedAt != nil {
		b = binary.AppendVarint(b, l.DeletedAt.UnixMilli())
	}
	return binary.AppendVarint(b, l.Rev)
}

var errBadEntry = errors.New("bad link entry")

// minEntry is about the smallest entry: a link ID and code, a destination, times.
const minEntry = 48

// readEntry reads the entry at the start of b and returns the rest; ownerID is whose it is.
// The link's strings share b's memory.
func readEntry(b string, ownerID string) (packed, string, error) {
	var out packed
	var fields [4]string
	for i := range fields {
		n, k := uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return out, "", errBadEntry
		}
		fields[i], b = b[k:k+int(n)], b[k+int(n):]
	}
	if len(b) == 0 {
		return out, "", errBadEntry
	}
	flags := b[0]
	b = b[1:]
	var times [3]int64
	count := 2
	if flags&flagDeleted != 0 {
		count = 3
	}
	for i := range count {
		v, k := varint(b)
		if k <= 0 {
			return out, "", errBadEntry
		}
		times[i], b = v, b[k:]
	}
	rev, k := varint(b)
	if k <= 0 {
		return out, "", errBadEntry
	}
	out.Link = links.Link{ID: fields[0], ShortCode: fields[1], DestinationURL: fields[2], Status: internStatus(fields[3]),
		OwnerID: ownerID, AutoRenew: flags&flagAutoRenew != 0, CreatedAt: time.UnixMilli(times[0]).UTC(),
		ExpiresAt: time.UnixMilli(times[1]).UTC(), Rev: rev}
	if flags&flagDeleted != 0 {
		at := time.UnixMilli(times[2]).UTC()
		out.DeletedAt = &at
	}
	out.gone = flags&flagGone != 0
	return out, b[k:], nil
}

// uvarint is binary.Uvarint over a string.
func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -(i + 1) // overflow
			}
			return x | uint64(c)<<shift, i + 1
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// varint is binary.Varint over a string.
func varint(s string) (int64, int) {
	ux, n := uvarint(s)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x, n
}

// internStatus shares the usual statuses' strings between entries.
func internStatus(s string) string {
	switch s {
	case link.StatusActive:
		return link.StatusActive
	case link.StatusDisabled:
		return link.StatusDisabled
	}
	return s
}

// decodePack reads a stored pack.
func decodePack(d packDoc) (*pack, error) {
	b, err := packDecoder.DecodeAll(d.Data, nil)
	if err != nil {
		return nil, fmt.Errorf("read link pack %s: %w", d.ID, err)
	}
	// One string for the pack: its links' strings are parts of it.
	raw := string(b)
	p := &pack{doc: d, links: make([]packed, 0, min(packSize, len(raw)/minEntry+1))}
	for len(raw) > 0 {
		var e packed
		if e, raw, err = readEntry(raw, d.OwnerID); err != nil {
			return nil, fmt.Errorf("read link pack %s: %w", d.ID, err)
		}
		p.links = append(p.links, e)
	}
	p.doc.Data = nil
	return p, nil
}

// encode is p's entries, compressed.
func (p *pack) encode() []byte {
	var raw []byte
	for _, e := range p.links {
		l := e.Link
		if e.gone && l.Purge == nil {
			l.Purge = &links.PurgeMark{}
		}
		raw = appendEntry(raw, l)
	}
	return packEncoder.EncodeAll(raw, nil)
}

// readPacks reads ownerID's packs, in order.
func (s *Store) readPacks(ctx context.Context, ownerID string) ([]*pack, error) {
	cur, err := s.packs.Find(ctx, bson.D{{Key: "owner_id", Value: ownerID}})
	if err != nil {
		return nil, fmt.Errorf("read link packs: %w", err)
	}
	var docs []packDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read link packs: %w", err)
	}
	out := make([]*pack, 0, len(docs))
	for _, d := range docs {
		p, err := decodePack(d)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *pack) int { return cmp.Compare(a.doc.Seq, b.doc.Seq) })
	return out, nil
}

// writePacks stores ps's changed packs, each conditionally on the version it was read at: a
// pack written meanwhile (a second folder) fails the round, and the next round applies its
// changes again.
func (s *Store) writePacks(ctx context.Context, ps []*pack) error {
	for _, p := range ps {
		if !p.dirty {
			continue
		}
		data := p.encode()
		if p.doc.V == 0 {
			p.doc.V, p.doc.Data = 1, data
			if _, err := s.packs.InsertOne(ctx, p.doc); err != nil {
				return fmt.Errorf("write link pack %s: %w", p.doc.ID, err)
			}
			continue
		}
		res, err := s.packs.UpdateOne(ctx, bson.D{{Key: "_id", Value: p.doc.ID}, {Key: "owner_id", Value: p.doc.OwnerID}, {Key: "v", Value: p.doc.V}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "data", Value: data}, {Key: "v", Value: p.doc.V + 1}}}})
		if err != nil {
			return fmt.Errorf("write link pack %s: %w", p.doc.ID, err)
		}
		if res.MatchedCount == 0 {
			return fmt.Errorf("write link pack %s: written by another folder meanwhile", p.doc.ID)
		}
		p.doc.V++
	}
	return nil
}

// packEntries writes entries, each an owner's link as a change left it, into their owners'
// packs, keeping each link's highest revision.
func (s *Store) packEntries(ctx context.Context, entries map[string][]packed) error {
	owners := make([]string, 0, len(entries))
	for o := range entries {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	for _, owner := range owners {
		ps, err := s.readPacks(ctx, owner)
		if err != nil {
			return err
		}
		type at struct{ p, i int }
		where := map[string]at{}
		for pi, p := range ps {
			for i, e := range p.links {
				where[e.ID] = at{pi, i}
			}
		}
		for _, e := range entries[owner] {
			if w, ok := where[e.ID]; ok {
				p := ps[w.p]
				if cur := p.links[w.i]; cur.Rev >= e.Rev || cur.gone {
					continue
				}
				p.links[w.i], p.dirty = e, true
				continue
			}
			if len(ps) == 0 || len(ps[len(ps)-1].links) >= packSize {
				seq := len(ps)
				if seq > 0 {
					seq = ps[len(ps)-1].doc.Seq + 1
				}
				ps = append(ps, &pack{doc: packDoc{ID: fmt.Sprintf("%s/%06d", owner, seq), OwnerID: owner, Seq: seq}})
			}
			p := ps[len(ps)-1]
			p.links, p.dirty = append(p.links, e), true
			where[e.ID] = at{len(ps) - 1, len(p.links) - 1}
		}
		if err := s.writePacks(ctx, ps); err != nil {
			return err
		}
	}
	return nil
}

// packChanges writes the entries cs carry into their owners' packs.
func (s *Store) packChanges(ctx context.Context, cs []changeDoc) error {
	entries := map[string][]packed{}
	for _, c := range cs {
		if c.OwnerID == "" || len(c.Entry) == 0 {
			continue
		}
		e, _, err := readEntry(string(c.Entry), c.OwnerID)
		if err != nil {
			return fmt.Errorf("read link change %s: %w", c.ID, err)
		}
		entries[c.OwnerID] = append(entries[c.OwnerID], e)
	}
	if len(entries) == 0 {
		return nil
	}
	return s.packEntries(ctx, entries)
}

// packBatch writes the entries of batch's changes into their owners' packs: cs when the
// round read them already, otherwise (a batch a crash left) read again.
func (s *Store) packBatch(ctx context.Context, batch string, cs []changeDoc, read bool) error {
	if !read {
		cur, err := s.changes.Find(ctx, bson.D{{Key: "batch", Value: batch}})
		if err != nil {
			return fmt.Errorf("read link changes: %w", err)
		}
		if err := cur.All(ctx, &cs); err != nil {
			return fmt.Errorf("read link changes: %w", err)
		}
	}
	return s.packChanges(ctx, cs)
}

// packsAreReady says whether every link stored before the packs existed is packed; once it
// is, it stays so.
func (s *Store) packsAreReady(ctx context.Context) (bool, error) {
	if s.packed.Load() {
		return true, nil
	}
	n, err := s.counts.CountDocuments(ctx, bson.D{{Key: "_id", Value: packsReady}})
	if err != nil {
		return false, fmt.Errorf("read link packs state: %w", err)
	}
	if n > 0 {
		s.packed.Store(true)
	}
	return n > 0, nil
}

// ensurePacks packs the links stored before the packs existed, once, owner by owner from
// the links themselves; a crash before the mark starts it over. Changes recorded meanwhile
// are folded afterwards, each only over an older revision.
func (s *Store) ensurePacks(ctx context.Context) error {
	if ok, err := s.packsAreReady(ctx); ok || err != nil {
		return err
	}
	if _, err := s.packs.DeleteMany(ctx, bson.D{}); err != nil {
		return fmt.Errorf("clear link packs: %w", err)
	}
	res := s.links.Distinct(ctx, "owner_id", bson.D{})
	var owners []any
	if err := res.Decode(&owners); err != nil {
		return fmt.Errorf("read link owners: %w", err)
	}
	for _, o := range owners {
		owner, ok := o.(string)
		if !ok || owner == "" {
			continue
		}
		cur, err := s.links.Find(ctx, bson.D{{Key: "owner_id", Value: owner}})
		if err != nil {
			return fmt.Errorf("read owner's links: %w", err)
		}
		var docs []doc
		if err := cur.All(ctx, &docs); err != nil {
			return fmt.Errorf("read owner's links: %w", err)
		}
		entries := make([]packed, 0, len(docs))
		for _, d := range docs {
			l := fromDoc(d)
			entries = append(entries, packed{Link: l, gone: l.Purge != nil})
		}
		if err := s.packEntries(ctx, map[string][]packed{owner: entries}); err != nil {
			return err
		}
	}
	if _, err := s.counts.InsertOne(ctx, bson.D{{Key: "_id", Value: packsReady}, {Key: "at", Value: s.now().UTC()}}); err != nil &&
		!mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("mark link packs ready: %w", err)
	}
	s.packed.Store(true)
	return nil
}

// ownerLinks is every link of ownerID as of now, soft-deleted ones included and links being
// purged not: the done changes not folded yet over the packs.
func (s *Store) ownerLinks(ctx context.Context, ownerID string) ([]*links.Link, error) {
	cur, err := s.changes.Find(ctx, bson.D{{Key: "owner_id", Value: ownerID}, {Key: "done", Value: true}},
		options.Find().SetProjection(bson.D{{Key: "entry", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("read owner's link changes: %w", err)
	}
	var pending []struct {
		Entry []byte `bson:"entry"`
	}
	if err := cur.All(ctx, &pending); err != nil {
		return nil, fmt.Errorf("read owner's link changes: %w", err)
	}
	ps, err := s.readPacks(ctx, ownerID)
	if err != nil {
		return nil, err
	}
	n := len(pending)
	for _, p := range ps {
		n += len(p.links)
	}
	latest := make(map[string]int, len(pending))
	all := make([]*packed, 0, n)
	for _, c := range pending {
		e, _, err := readEntry(string(c.Entry), ownerID)
		if err != nil {
			return nil, fmt.Errorf("read owner's link change: %w", err)
		}
		if i, ok := latest[e.ID]; ok {
			if all[i].Rev < e.Rev {
				all[i] = &e
			}
			continue
		}
		latest[e.ID] = len(all)
		all = append(all, &e)
	}
	for _, p := range ps {
		for j := range p.links {
			e := &p.links[j]
			if i, ok := latest[e.ID]; ok {
				if all[i].Rev < e.Rev {
					all[i] = e
				}
				continue
			}
			all = append(all, e)
		}
	}
	out := make([]*links.Link, 0, len(all))
	for _, e := range all {
		if !e.gone {
			out = append(out, &e.Link)
		}
	}
	return out, nil
}

// packedQuery says whether q is an owner's view that the packs answer, once they are ready.
func (s *Store) packedQuery(ctx context.Context, q links.ListQuery) (bool, error) {
	if q.AnyOwner || q.IncludeDeleted || q.OwnerID == "" {
		return false, nil
	}
	return s.packsAreReady(ctx)
}

// selectLinks is q's links among ls (one owner's), newest first with ties in id order, as
// listFilter selects them.
func selectLinks(ls []*links.Link, q links.ListQuery) []*links.Link {
	out := make([]*links.Link, 0, len(ls))
	for _, l := range ls {
		if matches(l, q) {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b *links.Link) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out
}

// matches is listFilter for one link of q's owner.
func matches(l *links.Link, q links.ListQuery) bool {
	if l.DeletedAt != nil && !q.IncludeDeleted {
		return false
	}
	notExpired := l.AutoRenew || l.ExpiresAt.After(q.Now)
	switch q.State {
	case links.StateDisabled:
		if l.Status != link.StatusDisabled {
			return false
		}
	case links.StateActive:
		if l.Status != link.StatusActive || !notExpired {
			return false
		}
	case links.StateExpired:
		if l.Status != link.StatusActive || notExpired {
			return false
		}
	}
	return q.Contains == "" || strings.Contains(l.ShortCode, q.Contains) || strings.Contains(l.DestinationURL, q.Contains)
}

// page is a copy of ls[skip:skip+limit], bounded.
func page(ls []*links.Link, skip, limit int64) []links.Link {
	if skip < 0 || skip >= int64(len(ls)) {
		return nil
	}
	end := int64(len(ls))
	if limit > 0 && limit < end-skip {
		end = skip + limit
	}
	out := make([]links.Link, 0, end-skip)
	for _, l := range ls[skip:end] {
		out = append(out, *l)
	}
	return out
}
