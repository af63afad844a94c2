package clicks

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// spool is the ring of bytes that holds each visit from the moment the redirect answers it
// until its click is on the stream. Kept in a file (LINKMESH_CLICK_SPOOL, meant for a
// memory-backed volume: tmpfs, a Kubernetes emptyDir of medium Memory) and mapped shared,
// it outlives the process: a gateway killed by SIGKILL or the OOM killer finds, when it
// starts again, every visit it answered and had not yet written, and sends them under the
// event IDs they had, so the analytics service stores each once however often it was sent.
// Without a file it lives in process memory and a crash loses what it held.
//
// The file holds the client addresses of those visits, which is why it belongs in memory
// and is readable by its owner alone; a settled visit's bytes are zeroed at once.
//
// Layout: a header page (magic, ring size, event-ID prefix, tail, head), then the ring.
// Positions only grow; a position's byte is ring[pos%size]. A record is a 4-byte length and
// its payload, never split across the ring's end (wrapMark skips to the next lap). head is
// stored after the record it covers, so a record torn by a crash is never read.
//
// Writers (Recorder.Record) append at head under the recorder's lock. One reader (the
// recorder's Run) reads between its own read position and head, and moves tail, under the
// same lock, once the stream has the clicks: the writers never touch [tail, head).
type spool struct {
	mem    []byte // header page and ring
	ring   []byte
	size   uint64
	file   *os.File // nil: process memory
	lock   *os.File // held for the process's life: one gateway per spool
	prefix [8]byte  // event IDs: prefix, then the record's sequence number
	seq    uint64   // the next sequence number
	// damaged marks an earlier process's file whose header cannot be trusted.
	damaged bool
	// appended and taken count the records written (under the writers' lock) and read.
	appended, taken uint64

	head, read, tail uint64
}

const (
	spoolMagic  = "LMSPOOL1"
	headerSize  = 4096
	offSize     = 8
	offPrefix   = 16
	offTail     = 24
	offHead     = 32
	wrapMark    = ^uint32(0)
	lenSize     = 4
	idSize      = 16
	minSpool    = 1 << 20
	maxUA       = 2048 // longer User-Agents are cut: no browser sends one
	maxReferer  = 4097 // ReferrerHost takes anything longer as no referrer
	maxCountry  = 8
	maxIdent    = 128 // link ID, owner ID and code are ours and short
	maxRecord   = idSize + 8 + 1 + 16 + 6*binary.MaxVarintLen16 + 3*maxIdent + maxUA + maxReferer + maxCountry
	pageSize    = 4096
	spoolFileOK = 0o600
)

// maxPosition bounds the positions a spool file may claim: far beyond what a ring can reach
// (2^62 bytes), and far enough from 2^64 that no sum of positions overflows.
const maxPosition = 1 << 62

// openSpool maps path as a spool of size bytes, or makes one in process memory when path is
// empty. The visits an earlier process left in the file are kept: in place when the file
// has the size asked for, else carried into a ring of the new size written beside it and
// renamed over it (so a crash in between loses nothing; that once needs room for both).
// carried reports how many visits were kept, lost how many could not be: unreadable, or
// beyond a smaller ring. A file that is no spool is refused, never overwritten.
func openSpool(path string, size int) (s *spool, carried, lost int, err error) {
	if size < minSpool || uint64(size) > maxSpool {
		return nil, 0, 0, fmt.Errorf("click spool of %d bytes: between %d and %d", size, minSpool, uint64(maxSpool))
	}
	s = &spool{size: uint64(size)}
	if _, err := rand.Read(s.prefix[:]); err != nil {
		return nil, 0, 0, err
	}
	if path == "" {
		s.mem = make([]byte, headerSize+size)
		touch(s.mem)
		s.init()
		return s, 0, 0, nil
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, spoolFileOK)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("click spool: %w", err)
	}
	if err := ours(lock); err != nil {
		_ = lock.Close()
		return nil, 0, 0, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, 0, 0, fmt.Errorf("click spool %s is in use by another process", path)
		}
		return nil, 0, 0, fmt.Errorf("click spool %s: lock: %w", path, err)
	}
	s.lock = lock
	defer func() {
		if err != nil {
			s.close()
			s = nil
		}
	}()
	old, err := mapExisting(path)
	if err != nil {
		return s, 0, 0, err
	}
	if old != nil && old.size == s.size {
		// A file written without reserving its room (a file system without fallocate) must
		// not fault once memory runs short: reserve it now, or fail now.
		if err := syscall.Fallocate(int(old.file.Fd()), 0, 0, int64(headerSize+old.size)); err != nil && !errors.Is(err, syscall.EOPNOTSUPP) {
			old.close()
			return s, 0, 0, fmt.Errorf("click spool: reserve %d bytes for %s: %w", headerSize+old.size, path, err)
		}
		carried, lost = old.keep()
		old.prefix = s.prefix
		copy(old.mem[offPrefix:], s.prefix[:])
		old.lock, s = lock, old
		return s, carried, lost, nil
	}
	if err := s.create(path + ".new"); err != nil {
		old.close()
		return s, 0, 0, err
	}
	if old != nil {
		_, lost = old.keep()
		for {
			rec, ok, _ := old.next(old.head)
			if !ok {
				break
			}
			if s.append(rec) {
				carried++
			} else {
				lost++
			}
		}
	}
	if err := os.Rename(path+".new", path); err != nil {
		old.close()
		_ = os.Remove(path + ".new") // the old file still holds every visit
		return s, 0, 0, fmt.Errorf("click spool: %w", err)
	}
	if old != nil && old.ring != nil {
		old.zeroRange(old.tail, old.head) // the visits are in the new ring now; the old file is unlinked
	}
	old.close()
	return s, carried, lost, nil
}

// inMemory reports whether the file system holding path keeps its files in memory (tmpfs,
// ramfs), as a spool holding client addresses should be.
func inMemory(path string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return false
	}
	const tmpfsMagic, ramfsMagic = 0x01021994, 0x858458f6
	return st.Type == tmpfsMagic || st.Type == ramfsMagic
}

// maxSpool is the largest ring (LINKMESH_CLICK_SPOOL_MB's bound).
const maxSpool = 4 << 30

// mapExisting maps the spool file at path as it was left, or returns nil when there is
// none. A spool whose header cannot be trusted comes back marked damaged (keep counts it as
// one loss and empties it); a file that is no spool at all is an error: it is not ours to
// overwrite.
func mapExisting(path string) (*spool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("click spool: %w", err)
	}
	if err := ours(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	var hdr [headerSize]byte
	fi, err := f.Stat()
	if err == nil && fi.Size() == 0 {
		_ = f.Close() // an empty file holds nothing to keep
		return nil, nil
	}
	if err == nil {
		_, err = io.ReadFull(f, hdr[:])
	}
	if err != nil || string(hdr[:len(spoolMagic)]) != spoolMagic {
		_ = f.Close()
		return nil, fmt.Errorf("click spool: %s is not a click spool (remove it, or set LINKMESH_CLICK_SPOOL to a path of its own)", path)
	}
	size := binary.LittleEndian.Uint64(hdr[offSize:])
	tail, head := binary.LittleEndian.Uint64(hdr[offTail:]), binary.LittleEndian.Uint64(hdr[offHead:])
	o := &spool{size: size, file: f, head: head, read: tail, tail: tail, damaged: true}
	if size < minSpool || size > maxSpool || fi.Size() != int64(headerSize+size) {
		o.size = 0 // nothing to map
		return o, nil
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, headerSize+int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("click spool: map %s: %w", path, err)
	}
	o.mem, o.ring = mem, mem[headerSize:]
	o.damaged = tail > head || head >= maxPosition || head-tail > size
	return o, nil
}

// keep checks the records an earlier process left between tail and head, cuts the ring
// at the first that cannot be read, and zeroes everything else; it reports the records
// kept and, as one loss, any damage. The records are then read again from tail.
func (o *spool) keep() (kept, lost int) {
	if o.damaged {
		o.tail, o.head, o.read = 0, 0, 0
		lost = 1
	}
	for {
		at := o.read
		_, ok, bad := o.next(o.head)
		if bad {
			o.head, lost = at, 1
			break
		}
		if !ok {
			break
		}
		kept++
	}
	if o.ring != nil {
		o.zeroRange(o.head, o.tail+o.size) // what is no visit: settled, torn or damaged
		o.store(offTail, o.tail)
		o.store(offHead, o.head)
	}
	o.read, o.appended, o.taken = o.tail, uint64(kept), 0
	return kept, lost
}

// ours refuses a spool file (or its lock) that another user owns, that others may read or
// write (mode wider than 0600), or that is no regular file: the spool holds client
// addresses, and a file prepared by someone else could leak them or feed us forged visits.
// The check is on the open file, so it cannot be swapped between check and use.
func ours(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("click spool: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("click spool: %s is not a regular file", f.Name())
	case !ok:
		return fmt.Errorf("click spool: the owner of %s cannot be read on this system", f.Name())
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("click spool: %s is owned by another user (uid %d); remove it", f.Name(), st.Uid)
	case fi.Mode().Perm()&^spoolFileOK != 0:
		return fmt.Errorf("click spool: %s has mode %#o, wider than %#o; remove it or chmod 600 it", f.Name(), fi.Mode().Perm(), spoolFileOK)
	}
	return nil
}

// create makes a ring's file at path, its room reserved (a full file system is an error
// now, not a fault later), and maps it. A file left at path (a crash while resizing) is
// removed first, so the new one is made by us, with our mode, never through a link.
func (s *spool) create(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("click spool: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, spoolFileOK)
	if err != nil {
		return fmt.Errorf("click spool: %w", err)
	}
	n := int64(headerSize + s.size)
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("click spool: %w", err)
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			return fail(fmt.Errorf("reserve %d bytes for %s: %w", n, path, err))
		}
		if err := f.Truncate(n); err != nil { // a file system that cannot reserve
			return fail(err)
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(fmt.Errorf("map %s: %w", path, err))
	}
	s.file, s.mem = f, mem
	touch(mem)
	s.init()
	return nil
}

// pin locks a spool file's pages in memory, so that the kernel neither writes the client
// addresses they hold to swap nor reclaims them while the ring goes round: a page reclaimed
// between two laps costs a fault at the next write and at the zeroing after it, which is
// most of what a click costs the redirect's core on a host that reclaims idle pages. A
// spool in process memory is not pinned (a crash loses it anyway).
func (s *spool) pin() error {
	if s.file == nil {
		return nil
	}
	return syscall.Mlock(s.mem)
}

// touch writes to every page of mem, so that the spool takes its memory at start rather than
// while serving, and the process's size stays what it was at start.
func touch(mem []byte) {
	for i := 0; i < len(mem); i += pageSize {
		mem[i] = 0
	}
}

func (s *spool) init() {
	s.ring = s.mem[headerSize:]
	copy(s.mem, spoolMagic)
	binary.LittleEndian.PutUint64(s.mem[offSize:], s.size)
	copy(s.mem[offPrefix:], s.prefix[:])
	s.store(offTail, 0)
	s.store(offHead, 0)
}

// store writes a header word atomically, so that it is never seen half-written and a store
// of head comes after the record it covers.
func (s *spool) store(off int, v uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&s.mem[off])), v)
}

// room is how many bytes a record of n needs at head: its own and the ring's end it skips.
func (s *spool) room(n int) (skip uint64, ok bool) {
	need := uint64(lenSize + n)
	off := s.head % s.size
	if s.size-off < need {
		skip = s.size - off
	}
	return skip, s.head+skip+need-s.tail <= s.size
}

// append writes one record (its event ID and payload) at head, or reports the ring full.
func (s *spool) append(rec []byte) bool {
	skip, ok := s.room(len(rec))
	if !ok {
		return false
	}
	if skip > 0 {
		if skip >= lenSize {
			binary.LittleEndian.PutUint32(s.ring[s.head%s.size:], wrapMark)
		}
		s.head += skip
	}
	off := s.head % s.size
	binary.LittleEndian.PutUint32(s.ring[off:], uint32(len(rec)))
	copy(s.ring[off+lenSize:], rec)
	s.head += uint64(lenSize + len(rec))
	s.store(offHead, s.head)
	s.appended++
	return true
}

// next returns the record at read and moves past it; ok is false at head (which the caller
// read under the writers' lock), bad when the bytes there are no record (a damaged file).
func (s *spool) next(head uint64) (rec []byte, ok, bad bool) {
	for s.read < head {
		off := s.read % s.size
		n := wrapMark // fewer bytes than a length left: the writer went on at the next lap
		if s.size-off >= lenSize {
			n = binary.LittleEndian.Uint32(s.ring[off:])
		}
		if n == wrapMark {
			if s.size-off > head-s.read { // a writer skips only to write beyond
				return nil, false, true
			}
			s.read += s.size - off
			continue
		}
		if n < idSize || uint64(n) > s.size-off-lenSize || uint64(n)+lenSize > head-s.read {
			return nil, false, true
		}
		s.read += lenSize + uint64(n)
		s.taken++
		return s.ring[off+lenSize : off+lenSize+uint64(n)], true, false
	}
	return nil, false, false
}

// zeroRange zeroes the ring's bytes from position from up to to (at most one lap).
func (s *spool) zeroRange(from, to uint64) {
	for p := from; p < to; {
		off := p % s.size
		n := min(to-p, s.size-off)
		clear(s.ring[off : off+n])
		p += n
	}
}

// close unmaps the file and lets go of the lock; the file keeps what is unsettled. Only
// for a spool no recorder uses (tests, and an earlier process's file once carried over).
func (s *spool) close() {
	if s == nil {
		return
	}
	if s.mem != nil && s.file != nil {
		_ = syscall.Munmap(s.mem)
		s.mem, s.ring = nil, nil
	}
	if s.file != nil {
		_ = s.file.Close()
		s.file = nil
	}
	if s.lock != nil {
		_ = s.lock.Close()
		s.lock = nil
	}
}

// encode appends v's record — event ID, then the visit — to buf. Fields beyond their bound
// are cut (see maxUA and the others).
func (s *spool) encode(buf []byte, v *Visit) []byte {
	buf = append(buf, s.prefix[:]...)
	buf = binary.BigEndian.AppendUint64(buf, s.seq)
	s.seq++
	buf = binary.LittleEndian.AppendUint64(buf, uint64(v.At.UnixNano()))
	ip := v.IP.Unmap()
	switch {
	case ip.Is4():
		a := ip.As4()
		buf = append(append(buf, 4), a[:]...)
	case ip.Is6():
		a := ip.As16()
		buf = append(append(buf, 16), a[:]...)
	default:
		buf = append(buf, 0)
	}
	for _, f := range [...]struct {
		s   string
		max int
	}{{v.LinkID, maxIdent}, {v.OwnerID, maxIdent}, {v.Code, maxIdent}, {v.UserAgent, maxUA}, {v.Referer, maxReferer}, {v.EdgeCountry, maxCountry}} {
		str := f.s[:min(len(f.s), f.max)]
		buf = binary.AppendUvarint(buf, uint64(len(str)))
		buf = append(buf, str...)
	}
	return buf
}

// view reads a record back into a visit with its event ID, without a copy: the visit's
// strings are rec's bytes, and its event ID is written into id, so it is good only while
// both stay as they are; false for bytes that are no record. The recorder enriches every
// visit this way, allocating nothing.
func view(rec []byte, id *[2 * idSize]byte) (v Visit, ok bool) {
	if len(rec) < idSize+8+1 {
		return Visit{}, false
	}
	hex.Encode(id[:], rec[:idSize])
	v.EventID = unsafe.String(&id[0], len(id))
	rec = rec[idSize:]
	v.At = time.Unix(0, int64(binary.LittleEndian.Uint64(rec))).UTC()
	n := int(rec[8])
	rec = rec[9:]
	if (n != 0 && n != 4 && n != 16) || len(rec) < n {
		return Visit{}, false
	}
	if n > 0 {
		v.IP, _ = netip.AddrFromSlice(rec[:n])
	}
	rec = rec[n:]
	for _, f := range [...]*string{&v.LinkID, &v.OwnerID, &v.Code, &v.UserAgent, &v.Referer, &v.EdgeCountry} {
		l, k := binary.Uvarint(rec)
		if k <= 0 || l > uint64(len(rec)-k) {
			return Visit{}, false
		}
		*f = unsafe.String(unsafe.SliceData(rec[k:]), int(l))
		rec = rec[k+int(l):]
	}
	return v, len(rec) == 0
}
