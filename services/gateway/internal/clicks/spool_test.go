package clicks

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/redis/go-redis/v9"
)

func testVisit(i int) Visit {
	return Visit{LinkID: fmt.Sprintf("link-%d", i), OwnerID: "owner", Code: "abc", At: time.Unix(1700000000, int64(i)).UTC(),
		IP: netip.MustParseAddr("2001:db8::1"), UserAgent: strings.Repeat("u", i%300), Referer: "https://example.com/" + strings.Repeat("p", i%700)}
}

// A visit comes back from its record as it went in, with its event ID; fields beyond their
// bound are cut, and bytes that are no record are refused.
func TestSpoolRecordRoundTrip(t *testing.T) {
	s, _, _, err := openSpool("", minSpool)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []Visit{
		testVisit(7),
		{LinkID: "l", At: time.Unix(0, 5).UTC(), IP: netip.MustParseAddr("192.0.2.9"), EdgeCountry: "GB"},
		{LinkID: "l", At: time.Unix(0, 5).UTC(), IP: netip.MustParseAddr("::ffff:192.0.2.9")},
		{LinkID: "l", At: time.Unix(0, 5).UTC()}, // no address
	} {
		rec := s.encode(nil, &v)
		got, ok := decode(rec)
		if !ok {
			t.Fatalf("%+v does not decode", v)
		}
		if len(got.EventID) != 32 || !strings.HasPrefix(got.EventID, fmt.Sprintf("%x", s.prefix)) {
			t.Errorf("event ID %q", got.EventID)
		}
		want := v
		want.IP, want.EventID = v.IP.Unmap(), got.EventID
		if got != want {
			t.Errorf("%+v came back as %+v", want, got)
		}
	}
	long := Visit{LinkID: "l", UserAgent: strings.Repeat("a", 10000), Referer: strings.Repeat("r", 10000), EdgeCountry: strings.Repeat("c", 50)}
	rec := s.encode(nil, &long)
	if len(rec) > maxRecord {
		t.Fatalf("record of %d bytes, bound %d", len(rec), maxRecord)
	}
	got, ok := decode(rec)
	if !ok || len(got.UserAgent) != maxUA || len(got.Referer) != maxReferer || len(got.EdgeCountry) != maxCountry {
		t.Fatalf("long fields came back as %d, %d, %d bytes (%v)", len(got.UserAgent), len(got.Referer), len(got.EdgeCountry), ok)
	}
	if ReferrerHost(got.Referer) != ReferrerHost(long.Referer) {
		t.Error("cutting the Referer changed its host")
	}
	// Two records never share an event ID.
	a, _ := decode(s.encode(nil, &long))
	if a.EventID == got.EventID {
		t.Error("two records got one event ID")
	}
	for _, bad := range [][]byte{nil, rec[:10], rec[:len(rec)-1], append(append([]byte{}, rec...), 0), append(append([]byte{}, rec[:idSize+8]...), 7)} {
		if _, ok := decode(bad); ok {
			t.Errorf("%d bytes of garbage decoded", len(bad))
		}
	}
}

// Records go round the ring many times, each read back whole and in order; a full ring
// refuses, and letting go of what was read makes room again.
func TestSpoolRingWrapsAndFills(t *testing.T) {
	s, _, _, err := openSpool("", minSpool)
	if err != nil {
		t.Fatal(err)
	}
	written, read := 0, 0
	for lap := 0; lap < 20; lap++ {
		for {
			v := testVisit(written)
			if !s.append(s.encode(nil, &v)) {
				break
			}
			written++
		}
		if s.head-s.tail > s.size || s.head-s.tail < s.size-maxRecord-lenSize {
			t.Fatalf("a full ring holds %d of %d bytes", s.head-s.tail, s.size)
		}
		for {
			rec, ok, bad := s.next(s.head)
			if bad {
				t.Fatalf("record %d unreadable", read)
			}
			if !ok {
				break
			}
			v, ok := decode(rec)
			if want := testVisit(read); !ok || v.LinkID != want.LinkID || v.UserAgent != want.UserAgent || v.Referer != want.Referer {
				t.Fatalf("record %d came back as %+v", read, v)
			}
			read++
		}
		release(s, s.read)
		if s.tail != s.head || !bytes.Equal(s.ring, make([]byte, len(s.ring))) {
			t.Fatal("bytes of records let go are still in the ring")
		}
	}
	if read != written || s.head < 15*s.size {
		t.Fatalf("read %d of %d records over %d bytes", read, written, s.head)
	}
}

// release lets go of the records before pos as settle does: the file's tail, the bytes,
// then the writers' tail.
func release(s *spool, pos uint64) {
	s.store(offTail, pos)
	s.zeroRange(s.tail, pos)
	s.tail = pos
}

// fill appends n visits and returns their event IDs.
func fill(t *testing.T, s *spool, n int, big bool) []string {
	t.Helper()
	var ids []string
	for i := range n {
		v := testVisit(i)
		if big {
			v.UserAgent, v.Referer = strings.Repeat("a", maxUA), strings.Repeat("r", maxReferer)
		}
		rec := s.encode(nil, &v)
		if !s.append(rec) {
			t.Fatalf("ring full after %d visits", i)
		}
		d, _ := decode(rec)
		ids = append(ids, d.EventID)
	}
	return ids
}

// readAll reads every record from s's read position and returns their event IDs.
func readAll(s *spool) []string {
	var ids []string
	for {
		rec, ok, _ := s.next(s.head)
		if !ok {
			return ids
		}
		v, _ := decode(rec)
		ids = append(ids, v.EventID)
	}
}

// zeroOutside reports whether the file's ring is zero everywhere but between tail and head.
func zeroOutside(t *testing.T, path string) bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o := &spool{mem: raw, ring: raw[headerSize:], size: uint64(len(raw) - headerSize)}
	tail, head := binary.LittleEndian.Uint64(raw[offTail:]), binary.LittleEndian.Uint64(raw[offHead:])
	o.zeroRange(tail, head) // blank the visits kept; all else must be zero already
	return bytes.Equal(o.ring, make([]byte, len(o.ring)))
}

// A spool file outlives its process: the next process keeps, in place, the visits not let
// go — in order, under their event IDs — and none that were, not even a crash between the
// two steps of letting go; a second process cannot open a spool in use.
func TestSpoolFileKeepsVisitsInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clicks.spool")
	s, carried, lost, err := openSpool(path, minSpool)
	if err != nil || carried != 0 || lost != 0 {
		t.Fatalf("new spool: %v, carried %d lost %d", err, carried, lost)
	}
	if _, _, _, err := openSpool(path, minSpool); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a spool in use opened again: %v", err)
	}
	ids := fill(t, s, 100, false)
	for range 40 { // the first 40 are on the stream and let go; 10 more taken only, and
		s.next(s.head)
	}
	release(s, s.read)
	for range 10 {
		s.next(s.head)
	}
	for range 5 { // 5 more: all 55 settled, and a crash once the file's tail has moved past them
		s.next(s.head)
	}
	s.store(offTail, s.read)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != spoolFileOK {
		t.Fatalf("spool file %v, %v", fi, err)
	}
	s.close() // as a crash leaves it: nothing flushed, nothing removed

	s, carried, lost, err = openSpool(path, minSpool)
	if err != nil || carried != 45 || lost != 0 {
		t.Fatalf("reopened: %v, carried %d lost %d; want 45 and 0", err, carried, lost)
	}
	if got := readAll(s); !slices.Equal(got, ids[55:]) {
		t.Fatalf("visits came back as %d IDs, want ids 55-99 in order", len(got))
	}
	if !zeroOutside(t, path) {
		t.Fatal("bytes of visits let go are still in the file")
	}
	// New visits go on from there, under a prefix of their own.
	more := fill(t, s, 3, false)
	if more[0][:16] == ids[0][:16] || slices.Contains(ids, more[0]) {
		t.Fatalf("a new visit took an old event ID prefix: %s", more[0])
	}
	s.close()
}

// A spool of another size is carried into a new ring: what fits, the rest counted lost. A
// damaged spool is counted as one loss and starts empty, without hanging on absurd
// positions; a file that is no spool is refused and left alone.
func TestSpoolFileOfAnotherSizeOrDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clicks.spool")
	s, _, _, _ := openSpool(path, 2*minSpool)
	n := len(fill(t, s, (2*minSpool)/(maxRecord+lenSize)-1, true)) // more than 1 MiB of visits
	s.close()
	// An earlier resize cut short by a crash left its new ring behind: it is made again.
	_ = os.WriteFile(path+".new", []byte("half a ring"), 0o600)
	s, carried, lost, err := openSpool(path, minSpool)
	if err != nil || carried+lost != n || lost == 0 || carried < n/3 {
		t.Fatalf("into a smaller ring: %v, carried %d lost %d of %d", err, carried, lost, n)
	}
	if fi, _ := os.Stat(path); fi.Size() != headerSize+minSpool {
		t.Fatalf("the spool file is %d bytes, want the new size", fi.Size())
	}
	if _, err := os.Stat(path + ".new"); err == nil {
		t.Fatal("the new ring's file is left beside the spool")
	}
	s.close()

	for name, damage := range map[string]func(f *os.File){
		"tail past head":  func(f *os.File) { _, _ = f.WriteAt(binary.LittleEndian.AppendUint64(nil, 1<<40), offTail) },
		"head at the end": func(f *os.File) { _, _ = f.WriteAt(binary.LittleEndian.AppendUint64(nil, ^uint64(0)), offHead) },
		"cut short":       func(f *os.File) { _ = f.Truncate(headerSize + 100) },
		"records of ones": func(f *os.File) {
			_, _ = f.WriteAt(bytes.Repeat([]byte{0xff}, 1000), headerSize)
			_, _ = f.WriteAt(binary.LittleEndian.AppendUint64(nil, 1000), offHead)
		},
	} {
		s, _, _, _ := openSpool(path, minSpool)
		fill(t, s, 3, false)
		s.close()
		f, _ := os.OpenFile(path, os.O_RDWR, 0)
		damage(f)
		_ = f.Close()
		s, carried, lost, err := openSpool(path, minSpool)
		if err != nil || carried != 0 || lost != 1 {
			t.Fatalf("%s: %v, carried %d lost %d; want 0 and 1", name, err, carried, lost)
		}
		fill(t, s, 3, false) // and it works
		if got := len(readAll(s)); got != 3 {
			t.Fatalf("%s: %d visits read back after the repair", name, got)
		}
		s.close()
	}

	other := filepath.Join(t.TempDir(), "notes.txt")
	_ = os.WriteFile(other, []byte("not a spool"), 0o600)
	if _, _, _, err := openSpool(other, minSpool); err == nil || !strings.Contains(err.Error(), "not a click spool") {
		t.Fatalf("a foreign file opened as a spool: %v", err)
	}
	if b, _ := os.ReadFile(other); string(b) != "not a spool" {
		t.Fatalf("a foreign file was overwritten: %q", b)
	}
}

// A gateway killed after its clicks reached the stream but before it let them go sends
// them again from the spool, under the same event IDs, so storage keeps each once; what
// it had not sent arrives too.
func TestRecorderAfterACrashResendsUnderTheSameIDs(t *testing.T) {
	rdb := testenv.Redis(t)
	streamName := testenv.Name("clicks")
	path := filepath.Join(t.TempDir(), "clicks.spool")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	newRecorder := func() *Recorder {
		e, err := NewEnricher(nil, NewRedisSalts(rdb))
		if err != nil {
			t.Fatal(err)
		}
		p, err := stream.NewProducer(stream.ProducerOptions{Client: rdb, Stream: streamName, Logger: log, FlushInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRecorder(RecorderOptions{QueueSize: 100, SpoolPath: path, SpoolSize: minSpool, Enricher: e, Producer: p, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	browser := "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
	a := newRecorder()
	for i := range 5 {
		a.Record(Visit{LinkID: fmt.Sprint("sent-", i), At: time.Now(), IP: netip.MustParseAddr("192.0.2.1"), UserAgent: browser})
	}
	a.step()
	// The pack is open: its visits are marked for nothing yet, and the spool keeps them.
	if d, _ := a.Queue(); d != 5 || len(a.marks) != 0 || a.producer.Accepted() != 0 {
		t.Fatalf("with the pack open: spool holds %d, %d marks, producer took %d; want 5, 0, 0", d, len(a.marks), a.producer.Accepted())
	}
	time.Sleep(packWait)
	a.step() // the pack handed to the producer, which writes it; the crash comes before the visits are let go
	ctx, cancel := context.WithCancel(context.Background())
	go a.producer.Run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for a.producer.Sent() < 1 && time.Now().Before(deadline) { // one entry packs the 5
		time.Sleep(time.Millisecond)
	}
	cancel()
	for i := range 3 {
		a.Record(Visit{LinkID: fmt.Sprint("unsent-", i), At: time.Now(), IP: netip.MustParseAddr("192.0.2.1"), UserAgent: browser})
	}
	a.spool.close()

	b := newRecorder()
	if d, _ := b.Queue(); d != 8 {
		t.Fatalf("the restarted recorder holds %d visits, want 8", d)
	}
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	deadline = time.Now().Add(10 * time.Second)
	for b.Published() < 8 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	clicks := streamClicks(t, rdb, streamName)
	if len(clicks) != 13 {
		t.Fatalf("stream holds %d clicks, want 5 + 5 again + 3", len(clicks))
	}
	ids := map[string][]string{}
	for _, c := range clicks {
		ids[c.LinkID] = append(ids[c.LinkID], c.EventID)
	}
	for i := range 5 {
		if got := ids[fmt.Sprint("sent-", i)]; len(got) != 2 || got[0] != got[1] {
			t.Errorf("visit sent before the crash went out as %v, want twice under one ID", got)
		}
	}
	for i := range 3 {
		if got := ids[fmt.Sprint("unsent-", i)]; len(got) != 1 {
			t.Errorf("visit unsent at the crash went out as %v, want once", got)
		}
	}
	if d, _ := b.Queue(); d != 0 {
		t.Errorf("%d visits still held after all were written", d)
	}
}

// unrunRecorder is a recorder whose producer (of queue entries) never runs: its Redis is
// never dialled, so the tests drive step themselves.
func unrunRecorder(t *testing.T, queue, visits int) (*Recorder, *stream.Producer) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := NewEnricher(nil, fixedSalt{})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	p, err := stream.NewProducer(stream.ProducerOptions{Client: rdb, Stream: "clicks", Logger: log, QueueSize: queue})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(RecorderOptions{QueueSize: visits, SpoolSize: minSpool, Enricher: e, Producer: p, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return r, p
}

// Run hands the producer only as many visits as it has room for: the rest wait in the spool,
// where a crash cannot take them, instead of being dropped by a full producer.
func TestRecorderWaitsForTheProducer(t *testing.T) {
	r, p := unrunRecorder(t, 1, 100)
	const visits = analytics.MaxPerEntry + 10 // a full entry's worth, and more
	for i := range visits {
		v := testVisit(i)
		v.UserAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
		r.Record(v)
	}
	if left := r.step(); left != 10 || p.Pending() != 1 {
		t.Fatalf("first step left %d untaken and the producer holding %d entries; want 10 and 1", left, p.Pending())
	}
	if left := r.step(); left != 10 || p.Dropped() != 0 || r.Dropped() != 0 {
		t.Fatalf("with the producer full, a step left %d untaken (want 10), producer dropped %d, recorder %d", left, p.Dropped(), r.Dropped())
	}
	if d, _ := r.Queue(); d != visits {
		t.Fatalf("the spool holds %d visits, want all %d until the stream has them", d, visits)
	}
}

// A pack due while the producer's queue is full waits, with its visits in the spool: it is
// neither dropped nor let go.
func TestOpenPackWaitsForTheProducer(t *testing.T) {
	r, p := unrunRecorder(t, 2, 1000)
	record := func(n int) {
		for i := range n {
			v := testVisit(i)
			v.UserAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
			r.Record(v)
		}
	}
	record(10)
	r.step() // a pack of 10, open
	record(2*analytics.MaxPerEntry - 10 + 10)
	r.step() // two full packs fill the queue; 10 more open a third
	time.Sleep(packWait)
	r.step() // the third is due, and the queue full
	if d, _ := r.Queue(); d != 2*analytics.MaxPerEntry+10 || p.Pending() != 2 || p.Dropped() != 0 || r.packed != 10 || len(r.marks) != 2 {
		t.Fatalf("spool holds %d, producer %d entries and dropped %d, pack %d, %d marks; want %d, 2, 0, 10, 2",
			d, p.Pending(), p.Dropped(), r.packed, len(r.marks), 2*analytics.MaxPerEntry+10)
	}
}

// A recorder in memory that cannot write its visits before it stops counts them dropped,
// and drops what comes after; with a file it keeps both for the next start.
func TestRecorderStoppedWithVisitsLeft(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond})
	defer rdb.Close()
	browser := "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
	for _, path := range []string{"", filepath.Join(t.TempDir(), "s")} {
		e, _ := NewEnricher(nil, fixedSalt{})
		p, err := stream.NewProducer(stream.ProducerOptions{Client: rdb, Stream: "clicks", Logger: log, QueueSize: 2, DrainTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRecorder(RecorderOptions{QueueSize: 100, SpoolPath: path, SpoolSize: minSpool, Enricher: e, Producer: p, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		r.drain = 100 * time.Millisecond
		for i := range 5 {
			v := testVisit(i)
			v.UserAgent = browser
			r.Record(v)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r.Run(ctx)
		v := testVisit(9)
		v.UserAgent = browser
		r.Record(v)
		d, _ := r.Queue()
		if path == "" && (r.Dropped() != 6 || d != 5) {
			t.Errorf("in memory: dropped %d, held %d; want the 5 left at shutdown and the one after counted dropped", r.Dropped(), d)
		}
		if path != "" {
			if r.Dropped() != 0 || d != 6 {
				t.Errorf("in a file: dropped %d, held %d; want 0 and all 6 kept", r.Dropped(), d)
			}
			r.spool.close()
			if _, carried, _, _ := openSpool(path, minSpool); carried != 6 {
				t.Errorf("the next start finds %d visits, want 6", carried)
			}
		}
	}
}

type fixedSalt struct{}

func (fixedSalt) Salt(string) ([]byte, error) { return make([]byte, 32), nil }

// Visits recorded from many goroutines while Run goes round the ring several times all
// reach the stream, each once, and the spool ends empty and zeroed.
func TestRecorderUnderConcurrentVisits(t *testing.T) {
	rdb := testenv.Redis(t)
	streamName := testenv.Name("clicks")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := NewEnricher(nil, fixedSalt{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := stream.NewProducer(stream.ProducerOptions{Client: rdb, Stream: streamName, Logger: log, QueueSize: 500, FlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(RecorderOptions{QueueSize: 1 << 20, SpoolPath: filepath.Join(t.TempDir(), "s"), SpoolSize: minSpool, Enricher: e, Producer: p, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	const writers, each = 4, 3000 // about 3 MB of records through a 1 MiB ring
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				v := testVisit(g*each + i)
				// One User-Agent, parsed once; the Referers vary the sizes.
				v.UserAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
				for !r.spoolVisit(&v) { // the ring is full: Run frees it
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for r.Published() < writers*each && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	n := len(streamClicks(t, rdb, streamName))
	if n != writers*each || r.Accepted() != writers*each || r.Published() != writers*each {
		t.Fatalf("stream holds %d clicks, recorder accepted %d and published %d; want %d", n, r.Accepted(), r.Published(), writers*each)
	}
	if used, _ := r.SpoolBytes(); used != 0 || r.spool.head < 2*r.spool.size {
		t.Fatalf("spool still uses %d bytes after %d written", used, r.spool.head)
	}
	if !bytes.Equal(r.spool.ring, make([]byte, len(r.spool.ring))) {
		t.Fatal("the ring still holds bytes of visits on the stream")
	}
}

// decode is view with the visit's strings copied, for tests that keep visits.
func decode(rec []byte) (Visit, bool) {
	var id [2 * idSize]byte
	v, ok := view(rec, &id)
	if !ok {
		return Visit{}, false
	}
	for _, f := range []*string{&v.EventID, &v.LinkID, &v.OwnerID, &v.Code, &v.UserAgent, &v.Referer, &v.EdgeCountry} {
		*f = strings.Clone(*f)
	}
	return v, true
}

// A spool file (or its lock) that others may read, that another user owns, or that is a
// link is refused and left as it is; a file left beside it by a crash while resizing is
// replaced by one of our own.
func TestSpoolRefusesFilesNotOurs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "clicks.spool")
	s, _, _, err := openSpool(path, minSpool)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, 3, false)
	s.close()

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := openSpool(path, minSpool); err == nil || !strings.Contains(err.Error(), "wider than 0600") {
		t.Fatalf("a spool others may read was opened: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("the refused file was changed: %v", fi.Mode())
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path+".lock", 0o666); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := openSpool(path, minSpool); err == nil || !strings.Contains(err.Error(), "wider than 0600") {
		t.Fatalf("a lock others may write was used: %v", err)
	}
	if err := os.Chmod(path+".lock", 0o600); err != nil {
		t.Fatal(err)
	}

	// A link in the spool's place, to a file that would be written through it.
	elsewhere := filepath.Join(dir, "elsewhere")
	if err := os.Rename(path, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, path); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := openSpool(path, minSpool); err == nil {
		t.Fatal("a spool reached through a link was opened")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(elsewhere, path); err != nil {
		t.Fatal(err)
	}

	// A leftover of a resize, readable by others: the new ring is a fresh file of ours.
	if err := os.WriteFile(path+".new", []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, carried, _, err := openSpool(path, 2*minSpool)
	if err != nil || carried != 3 {
		t.Fatalf("resize past a leftover: %v, carried %d", err, carried)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != spoolFileOK {
		t.Fatalf("resized spool %v, %v", fi, err)
	}
	s.close()

	if os.Geteuid() != 0 {
		t.Log("not root: another owner cannot be made here; the mode checks above still ran")
		return
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := openSpool(path, 2*minSpool); err == nil || !strings.Contains(err.Error(), "owned by another user") {
		t.Fatalf("a spool of another user was opened: %v", err)
	}
}
