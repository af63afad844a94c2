package clicks

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
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

// openSpool maps path as a spool of size bytes, or makes one in process memory when path is
// empty. The visits an earlier process left in the file are carried over into the new
// ring (written beside it and renamed over it, so a crash in between loses nothing);
// carried reports how many, lost how many could not be: unreadable, or beyond a smaller
// ring.
func openSpool(path string, size int) (s *spool, carried, lost int, err error) {
	if size < minSpool {
		return nil, 0, 0, fmt.Errorf("click spool of %d bytes: at least %d", size, minSpool)
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
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, spoolFileOK)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("click spool: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, 0, 0, fmt.Errorf("click spool %s is in use by another process: %w", path, err)
	}
	s.lock = lock
	left, lost, err := leftovers(path)
	if err != nil {
		s.close()
		return nil, 0, 0, err
	}
	if err := s.create(path); err != nil {
		s.close()
		return nil, 0, 0, err
	}
	for _, rec := range left {
		if !s.append(rec) {
			lost++
		} else {
			carried++
		}
	}
	if err := os.Rename(path+".new", path); err != nil {
		s.close()
		return nil, 0, 0, fmt.Errorf("click spool: %w", err)
	}
	return s, carried, lost, nil
}

// create makes the new ring's file beside path and maps it.
func (s *spool) create(path string) error {
	f, err := os.OpenFile(path+".new", os.O_CREATE|os.O_RDWR|os.O_TRUNC, spoolFileOK)
	if err != nil {
		return fmt.Errorf("click spool: %w", err)
	}
	if err := f.Truncate(int64(headerSize + s.size)); err != nil {
		_ = f.Close()
		return fmt.Errorf("click spool: %w", err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, headerSize+int(s.size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("click spool: map %s: %w", path, err)
	}
	s.file, s.mem = f, mem
	touch(mem)
	s.init()
	return nil
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

// store and load are atomic, so that a header word is never seen half-written and a store
// of head comes after the record it covers.
func (s *spool) store(off int, v uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&s.mem[off])), v)
}

// leftovers reads the records an earlier process left in the spool at path, each with its
// event ID; a missing file has none, an unreadable one is counted lost.
func leftovers(path string) (recs [][]byte, lost int, err error) {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("click spool: %w", err)
	}
	defer clear(old) // it holds client addresses
	if len(old) < headerSize || string(old[:len(spoolMagic)]) != spoolMagic {
		return nil, 1, nil
	}
	size := binary.LittleEndian.Uint64(old[offSize:])
	tail, head := binary.LittleEndian.Uint64(old[offTail:]), binary.LittleEndian.Uint64(old[offHead:])
	if size < minSpool || uint64(len(old)) != headerSize+size || tail > head || head-tail > size {
		return nil, 1, nil
	}
	o := &spool{mem: old, ring: old[headerSize:], size: size, head: head, read: tail, tail: tail}
	for {
		rec, ok, bad := o.next(o.head)
		if bad {
			return recs, lost + 1, nil
		}
		if !ok {
			return recs, lost, nil
		}
		recs = append(recs, append([]byte(nil), rec...))
	}
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
	return true
}

// next returns the record at read and moves past it; ok is false at head (which the caller
// read under the writers' lock), bad when the bytes there are no record (a damaged file).
func (s *spool) next(head uint64) (rec []byte, ok, bad bool) {
	for s.read < head {
		off := s.read % s.size
		if s.size-off < lenSize {
			s.read += s.size - off
			continue
		}
		n := binary.LittleEndian.Uint32(s.ring[off:])
		if n == wrapMark {
			s.read += s.size - off
			continue
		}
		if n < idSize || uint64(n) > s.size-off-lenSize || s.read+lenSize+uint64(n) > head {
			return nil, false, true
		}
		s.read += lenSize + uint64(n)
		return s.ring[off+lenSize : off+lenSize+uint64(n)], true, false
	}
	return nil, false, false
}

// zeroBefore zeroes the records between tail and pos, which the stream now has. It runs
// outside the writers' lock, before setTail frees their room under it: no writer reaches
// past tail.
func (s *spool) zeroBefore(pos uint64) {
	for p := s.tail; p < pos; {
		off := p % s.size
		n := min(pos-p, s.size-off)
		clear(s.ring[off : off+n])
		p += n
	}
}

func (s *spool) setTail(pos uint64) {
	s.tail = pos
	s.store(offTail, pos)
}

func (s *spool) close() {
	if s.file != nil {
		_ = syscall.Munmap(s.mem)
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

// decode reads a record back into a visit with its event ID; false for bytes that are no
// record.
func decode(rec []byte) (v Visit, ok bool) {
	if len(rec) < idSize+8+1 {
		return Visit{}, false
	}
	v.EventID = hex.EncodeToString(rec[:idSize])
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
	for _, f := range []*string{&v.LinkID, &v.OwnerID, &v.Code, &v.UserAgent, &v.Referer, &v.EdgeCountry} {
		l, k := binary.Uvarint(rec)
		if k <= 0 || l > uint64(len(rec)-k) {
			return Visit{}, false
		}
		*f = string(rec[k : k+int(l)])
		rec = rec[k+int(l):]
	}
	return v, len(rec) == 0
}
