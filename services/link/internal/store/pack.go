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
//     changes, keeping for each link its latest entry (newer): a batch applied twice (a
//     crash half way) changes nothing the second time, and a change settled late never
//     undoes a later one; a link being purged stays as a mark, so no late change of it brings
//     it back (a link created again under the same ID, from the same Idempotency-Key, is
//     newer than the mark);
//   - a view reads the owner's done changes first, then the packs, and keeps each link's
//     latest entry: a change folded between the two reads is in the packs by then;
//   - the fold makes the packs from the links themselves when there are none (links stored
//     before the packs existed), and again when a replica of an earlier version of this
//     service recorded or folded changes without entries (a rolling update, a rollback): it
//     knows from a change without an owner field, or from a batch added to the counters that
//     it did not pack. The marker (packsReady) names each making; a view reads it before
//     and after its reads and reads the links instead while there is none or it changed.
//
// A link whose insert's change was never recorded (the process died between the two writes,
// see Insert) is missing from its owner's packs until its next change or the next making; a
// write whose mark as done failed shows in the views once the fold settles it (changeLease).
const (
	packsCollection = "link_packs"
	// packsReady is the marker, in the counts collection: the packs are made (markerDoc).
	packsReady = "packs"
	// entryFormat is the first byte of every entry.
	entryFormat = 1
)

// packSize is how many links one pack document holds: a fold rewrites the packs it changes
// whole, so an owner's new links cost the rewrite of one pack of at most this many (~100
// bytes each before compression). Tests make it smaller.
var packSize = 2000

// markerDoc says the packs are made: gen names this making of them, batch the last fold
// batch whose entries they hold.
type markerDoc struct {
	Gen   string    `bson:"gen"`
	Batch string    `bson:"batch"`
	At    time.Time `bson:"at"`
}

// packDoc is a stored pack: the owner's seq-th, at version v (every write is conditional on
// it), its entries compressed.
type packDoc struct {
	ID      string `bson:"_id"`
	OwnerID string `bson:"owner_id"`
	Seq     int    `bson:"seq"`
	V       int64  `bson:"v"`
	Data    []byte `bson:"data"`
}

// pack is a pack read back: its links, the marks of purged ones included (their Purge set),
// kept so that no late change of a purged link brings it back.
type pack struct {
	doc   packDoc
	links []links.Link
	dirty bool
}

// goneMark is the Purge of a link read back as a purge mark: an entry keeps no more of it.
var goneMark = &links.PurgeMark{}

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
	b = append(b, entryFormat)
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
// The link's strings share b's memory; a purge mark reads with Purge goneMark.
func readEntry(b string, ownerID string) (links.Link, string, error) {
	var out links.Link
	if len(b) == 0 || b[0] != entryFormat {
		return out, "", errBadEntry
	}
	b = b[1:]
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
	out = links.Link{ID: fields[0], ShortCode: fields[1], DestinationURL: fields[2], Status: internStatus(fields[3]),
		OwnerID: ownerID, AutoRenew: flags&flagAutoRenew != 0, CreatedAt: time.UnixMilli(times[0]).UTC(),
		ExpiresAt: time.UnixMilli(times[1]).UTC(), Rev: rev}
	if flags&flagDeleted != 0 {
		at := time.UnixMilli(times[2]).UTC()
		out.DeletedAt = &at
	}
	if flags&flagGone != 0 {
		out.Purge = goneMark
	}
	return out, b[k:], nil
}

// goneEntry is c's entry as a purge mark, for a change settled after its link was purged;
// false when c carries no entry this version reads.
func goneEntry(c changeDoc) ([]byte, bool) {
	if c.OwnerID == nil {
		return nil, false
	}
	e, _, err := readEntry(string(c.Entry), *c.OwnerID)
	if err != nil {
		return nil, false
	}
	e.Purge = goneMark
	return appendEntry(nil, e), true
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
		return nil, fmt.Errorf("read link pack %s: %w: %w", d.ID, errBadEntry, err)
	}
	// One string for the pack: its links' strings are parts of it.
	raw := string(b)
	p := &pack{doc: d, links: make([]links.Link, 0, min(packSize, len(raw)/minEntry+1))}
	for len(raw) > 0 {
		var e links.Link
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
	for _, l := range p.links {
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
// packs.
func (s *Store) packEntries(ctx context.Context, entries map[string][]links.Link) error {
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
		if err := s.writePacks(ctx, merge(ps, owner, entries[owner])); err != nil {
			return err
		}
	}
	return nil
}

// merge puts entries into owner's packs ps: each over its link's entry unless that one is
// newer, a link not in them at the end of the last pack (a new one past packSize). It
// returns the packs, those it changed marked dirty.
func merge(ps []*pack, owner string, entries []links.Link) []*pack {
	if len(entries) == 0 {
		return ps // a view with no change waiting: no index of the packs to build
	}
	type at struct{ p, i int }
	where := map[string]at{}
	for pi, p := range ps {
		for i, l := range p.links {
			where[l.ID] = at{pi, i}
		}
	}
	for _, e := range entries {
		if w, ok := where[e.ID]; ok {
			if p := ps[w.p]; newer(e, p.links[w.i]) {
				p.links[w.i], p.dirty = e, true
			}
			continue
		}
		if len(ps) == 0 || len(ps[len(ps)-1].links) >= packSize {
			seq := 0
			if len(ps) > 0 {
				seq = ps[len(ps)-1].doc.Seq + 1
			}
			ps = append(ps, &pack{doc: packDoc{ID: fmt.Sprintf("%s/%06d", owner, seq), OwnerID: owner, Seq: seq}})
		}
		p := ps[len(ps)-1]
		p.links, p.dirty = append(p.links, e), true
		where[e.ID] = at{len(ps) - 1, len(p.links) - 1}
	}
	return ps
}

// packChanges writes the entries cs carry into their owners' packs; foreign says that some
// were recorded by another version, without an entry or with one this version cannot read.
func (s *Store) packChanges(ctx context.Context, cs []changeDoc) (foreign bool, err error) {
	entries := map[string][]links.Link{}
	for _, c := range cs {
		if c.OwnerID == nil {
			foreign = true
			continue
		}
		owner := *c.OwnerID
		if owner == "" {
			continue
		}
		e, _, err := readEntry(string(c.Entry), owner)
		if err != nil {
			foreign = true // another version's entry: the links tell
			continue
		}
		entries[owner] = append(entries[owner], e)
	}
	if len(entries) == 0 {
		return foreign, nil
	}
	return foreign, s.packEntries(ctx, entries)
}

// packBatch writes the entries of batch's changes into their owners' packs (cs when the round
// read them already; a batch a crash left, none read, is read again), then marks the packs as
// holding batch; a change without an entry drops the marker instead, so that the next round
// makes the packs again.
func (s *Store) packBatch(ctx context.Context, batch string, cs []changeDoc) error {
	if cs == nil {
		cur, err := s.changes.Find(ctx, bson.D{{Key: "batch", Value: batch}})
		if err != nil {
			return fmt.Errorf("read link changes: %w", err)
		}
		if err := cur.All(ctx, &cs); err != nil {
			return fmt.Errorf("read link changes: %w", err)
		}
	}
	foreign, err := s.packChanges(ctx, cs)
	if errors.Is(err, errBadEntry) {
		foreign = true // a pack another version wrote: made again next round
	} else if err != nil {
		return err
	}
	if foreign {
		return s.dropMarker(ctx)
	}
	if _, err := s.counts.UpdateOne(ctx, bson.D{{Key: "_id", Value: packsReady}}, bson.D{{Key: "$set", Value: bson.D{{Key: "batch", Value: batch}}}}); err != nil {
		return fmt.Errorf("mark link packs: %w", err)
	}
	return nil
}

// readMarker reads the packs' marker; false when they are not made.
func (s *Store) readMarker(ctx context.Context) (markerDoc, bool, error) {
	var m markerDoc
	err := s.counts.FindOne(ctx, bson.D{{Key: "_id", Value: packsReady}}).Decode(&m)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("read link packs marker: %w", err)
	}
	return m, true, nil
}

// ensurePacks makes the packs unless they hold every batch the counters were given: when
// there are none, and when a replica of an earlier version added a batch of its own.
func (s *Store) ensurePacks(ctx context.Context) error {
	_, found, holds, added, err := s.currentMarker(ctx)
	if holds || err != nil {
		return err
	}
	if found {
		// Views read the links from here until the packs are made again.
		if err := s.dropMarker(ctx); err != nil {
			return err
		}
	}
	return s.makePacks(ctx, added)
}

// currentMarker reads the packs' marker (found), whether the packs hold every batch added
// to the counters (holds), and the last batch added.
func (s *Store) currentMarker(ctx context.Context) (m markerDoc, found, holds bool, added string, err error) {
	if m, found, err = s.readMarker(ctx); err != nil {
		return m, false, false, "", err
	}
	if added, err = s.addedBatch(ctx); err != nil || !found {
		return m, found, false, added, err
	}
	holds, err = s.packsHold(ctx, m, added)
	return m, found, holds, added, err
}

// addedBatch is the last batch added to the counters ("" before the first).
func (s *Store) addedBatch(ctx context.Context) (string, error) {
	var added struct {
		Batch string `bson:"batch"`
	}
	if err := s.counts.FindOne(ctx, bson.D{{Key: "_id", Value: countsAll}}).Decode(&added); err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return "", fmt.Errorf("read link counts: %w", err)
	}
	return added.Batch, nil
}

// packsHold says whether the packs m marks hold every batch added to the counters, the last
// being added: the marker's batch is that one, or the one being added (the fold writes the
// packs, then the marker, then the counters). Every version's fold adds a batch to the
// counters before it deletes its changes, so packs that hold the last batch miss no change.
func (s *Store) packsHold(ctx context.Context, m markerDoc, added string) (bool, error) {
	if m.Batch == added {
		return true, nil
	}
	var w walDoc
	err := s.counts.FindOne(ctx, bson.D{{Key: "_id", Value: countsWAL}}).Decode(&w)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return false, fmt.Errorf("read link counts batch: %w", err)
	}
	return err == nil && w.ID == m.Batch, nil
}

// dropMarker drops the packs' marker: views read the links until the packs are made again.
func (s *Store) dropMarker(ctx context.Context) error {
	if _, err := s.counts.DeleteOne(ctx, bson.D{{Key: "_id", Value: packsReady}}); err != nil {
		return fmt.Errorf("drop link packs marker: %w", err)
	}
	return nil
}

// makePacks makes every owner's packs from the links, then the marker, saying they hold
// batch; a crash before the marker starts it over. Changes recorded meanwhile are folded
// afterwards, each only over an older entry.
func (s *Store) makePacks(ctx context.Context, batch string) error {
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
		entries := make([]links.Link, 0, len(docs))
		for _, d := range docs {
			entries = append(entries, fromDoc(d))
		}
		if err := s.packEntries(ctx, map[string][]links.Link{owner: entries}); err != nil {
			return err
		}
	}
	m := markerDoc{Gen: bson.NewObjectID().Hex(), Batch: batch, At: s.now().UTC()}
	if _, err := s.counts.InsertOne(ctx, bson.D{{Key: "_id", Value: packsReady}, {Key: "gen", Value: m.Gen},
		{Key: "batch", Value: m.Batch}, {Key: "at", Value: m.At}}); err != nil {
		return fmt.Errorf("mark link packs made: %w", err)
	}
	return nil
}

// ownerLinks is every link of ownerID as of now, soft-deleted ones included and links being
// purged not: the done changes not folded yet over the packs. It says false when the packs
// are not made, or were made again during the reads: the caller reads the links instead.
func (s *Store) ownerLinks(ctx context.Context, ownerID string) ([]*links.Link, bool, error) {
	before, ok, err := s.readMarker(ctx)
	if !ok || err != nil {
		return nil, false, err
	}
	out, err := s.packedLinks(ctx, ownerID)
	if errors.Is(err, errBadEntry) {
		return nil, false, nil // the fold makes the packs again
	}
	if err != nil {
		return nil, false, err
	}
	// Not made again meanwhile, and no fold of an earlier version (a rolling update, a
	// rollback) consumed changes without packing them.
	after, _, holds, _, err := s.currentMarker(ctx)
	if !holds || err != nil || after.Gen != before.Gen {
		return nil, false, err
	}
	return out, true, nil
}

// packedLinks is ownerLinks' read.
func (s *Store) packedLinks(ctx context.Context, ownerID string) ([]*links.Link, error) {
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
	entries := make([]links.Link, 0, len(pending))
	for _, c := range pending {
		e, _, err := readEntry(string(c.Entry), ownerID)
		if err != nil {
			return nil, fmt.Errorf("read owner's link change: %w", err)
		}
		entries = append(entries, e)
	}
	ps, err := s.readPacks(ctx, ownerID)
	if err != nil {
		return nil, err
	}
	ps = merge(ps, ownerID, entries)
	n := 0
	for _, p := range ps {
		n += len(p.links)
	}
	out := make([]*links.Link, 0, n)
	for _, p := range ps {
		for i := range p.links {
			if p.links[i].Purge == nil {
				out = append(out, &p.links[i])
			}
		}
	}
	return out, nil
}

// newer says whether a is a later state of its link than b: a later revision, or a link
// created again under the same ID (after a purge) — a later creation.
func newer(a, b links.Link) bool {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c > 0
	}
	return a.Rev > b.Rev
}

// ownersView says whether q is an owner's view, which the packs answer once they are made.
func ownersView(q links.ListQuery) bool { return !q.AnyOwner && !q.IncludeDeleted && q.OwnerID != "" }

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
	switch q.State {
	case links.StateActive, links.StateExpired, links.StateDisabled:
		if l.State(q.Now) != q.State {
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
