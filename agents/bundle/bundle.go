// Package bundle is the wire format of the thesis's message-bundle converter
// (Bobo 1997, sec. 3.1 and Fig. 3-1) and its group database (Table 3-1).
//
// A message is a 2-byte message address followed by its payload; the low bit
// of the address is the priority flag (Appendix B: addr&1), and the packet
// address (the IP multicast group) is the message address / 32. A bundle is
//
//	mask | message 1 | ... | message n | end 1 | ... | end n | n
//
// with a 2-byte bundle mask (one bit per host that must read the bundle), the
// messages back to back, a 2-byte end index per message (the offset just past
// its last byte, from the start of the bundle) and a 1-byte message count.
// Bundles toward the hosts carry, in place of each message's address, the
// message's interest bits (which hosts want it).
//
// For more than 16 hosts the mask is wider and the format says so: when the
// last byte has its high bit set it is 0x80 | words, the mask and each
// delivered message's interest field are words x 2 bytes, and a 2-byte count
// precedes it. A thesis bundle (last byte < 0x80, up to 127 messages) decodes
// unchanged. Nothing here allocates on the hot path.
package bundle

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Limits and constants of the format.
const (
	AddrBytes      = 2   // message address
	MaxThesisCount = 127 // messages in a thesis-format bundle (1-byte count, high bit clear)
	MaxWords       = 4   // widest mask: 4 x 16 bits = 64 hosts
	PerGroup       = 32  // message addresses per packet address (thesis sec. 3.1.3)
	Groups         = 65536 / PerGroup
)

// Decoding errors; each is a drop reason (see Reason).
var (
	ErrShort    = errors.New("bundle: shorter than its trailer")
	ErrCount    = errors.New("bundle: message count does not fit")
	ErrIndex    = errors.New("bundle: end index out of order or out of range")
	ErrMessage  = errors.New("bundle: message shorter than its address")
	ErrWords    = errors.New("bundle: mask wider than 64 hosts")
	ErrTooLarge = errors.New("bundle: larger than the end indexes can address")
)

// Reason is the metric label of a decoding error.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrShort):
		return "short"
	case errors.Is(err, ErrCount):
		return "count"
	case errors.Is(err, ErrIndex):
		return "index"
	case errors.Is(err, ErrMessage):
		return "message"
	case errors.Is(err, ErrWords):
		return "mask"
	default:
		return "malformed"
	}
}

// Priority reports the message address's priority flag.
func Priority(addr uint16) bool { return addr&1 == 1 }

// Group is the packet address (IP multicast group index) of a message address.
func Group(addr uint16) int { return int(addr) / PerGroup }

// Mask is a set of hosts, bit i = host i+1 (host ids 1..64).
type Mask uint64

// Bit is host id's bit (ids 1..64; 0 for ids out of range).
func Bit(id int) Mask {
	if id < 1 || id > 64 {
		return 0
	}
	return 1 << (id - 1)
}

// Has reports whether host id is in m.
func (m Mask) Has(id int) bool { return m&Bit(id) != 0 }

// Words is the mask width, in 16-bit words, that hosts 1..n need.
func Words(hosts int) int {
	w := (hosts + 15) / 16
	if w < 1 {
		w = 1
	}
	return w
}

// Writer builds one bundle in a caller's buffer: Begin, Add each message,
// Finish. Writing in place, it never allocates.
type Writer struct {
	buf   []byte
	words int
	ends  [1024]uint16
	n     int
	mask  Mask
	max   int
	rsv   int
}

// Begin starts a bundle in buf (its capacity bounds the bundle, as does max
// when > 0) with a mask of `words` 16-bit words (1 = the thesis's format).
func (w *Writer) Begin(buf []byte, words, max int) {
	if words < 1 {
		words = 1
	}
	w.words, w.n, w.mask, w.rsv = words, 0, 0, 0
	w.max = cap(buf)
	if max > 0 && max < w.max {
		w.max = max
	}
	w.buf = buf[:2*words]
}

// Len is the bundle's size if finished now.
func (w *Writer) Len() int { return len(w.buf) + w.trailer(w.n) }

// Words is the mask width the bundle is being written with.
func (w *Writer) Words() int { return w.words }

// Count is the number of messages added.
func (w *Writer) Count() int { return w.n }

// Mask is the union of the added messages' masks.
func (w *Writer) Mask() Mask { return w.mask }

func (w *Writer) trailer(n int) int {
	if w.words == 1 {
		return 2*n + 1
	}
	return 2*n + 3
}

// Fits reports whether a message of head+len(payload) bytes still fits.
func (w *Writer) Fits(head, payload int) bool {
	n := w.n + 1 // messages after this one
	if w.rsv > 0 {
		n++
	}
	if w.words == 1 && n > MaxThesisCount || n > len(w.ends) {
		return false
	}
	end := len(w.buf) + head + payload
	return end <= 0xFFFF && end+w.trailer(w.n+1)+w.rsv <= w.max
}

// Reserve keeps room for one more message of head+payload bytes (a closing
// control message) that Fits will not give away; Reserve(0, 0) releases it.
// It reports false, reserving nothing, when that room is no longer there.
func (w *Writer) Reserve(head, payload int) bool {
	if head == 0 && payload == 0 {
		w.rsv = 0
		return true
	}
	r := head + payload + 2
	if w.n+1 > len(w.ends) || w.words == 1 && w.n+1 > MaxThesisCount ||
		len(w.buf)+w.trailer(w.n)+r > w.max || len(w.buf)+head+payload > 0xFFFF {
		return false
	}
	w.rsv = r
	return true
}

// Reserved reports whether room is being kept.
func (w *Writer) Reserved() bool { return w.rsv > 0 }

// AddAddr appends a message with its 2-byte address (toward a converter).
func (w *Writer) AddAddr(addr uint16, payload []byte) bool {
	if !w.Fits(AddrBytes, len(payload)) {
		return false
	}
	w.buf = binary.BigEndian.AppendUint16(w.buf, addr)
	w.buf = append(w.buf, payload...)
	w.ends[w.n] = uint16(len(w.buf))
	w.n++
	return true
}

// AddMask appends a message whose address is replaced by its interest bits
// (toward the hosts; mask-width bytes), and adds them to the bundle mask.
func (w *Writer) AddMask(m Mask, payload []byte) bool {
	if !w.Fits(2*w.words, len(payload)) {
		return false
	}
	w.buf = putMask(w.buf, m, w.words)
	w.buf = append(w.buf, payload...)
	w.ends[w.n] = uint16(len(w.buf))
	w.n++
	w.mask |= m
	return true
}

// SetMask overrides the bundle mask (default: the union of AddMask's masks).
func (w *Writer) SetMask(m Mask) { w.mask = m }

// Finish writes the mask and trailer and returns the bundle.
func (w *Writer) Finish() []byte {
	b := w.buf
	for i := 0; i < w.words; i++ {
		binary.BigEndian.PutUint16(b[2*i:], uint16(w.mask>>(16*(w.words-1-i))))
	}
	for i := 0; i < w.n; i++ {
		b = binary.BigEndian.AppendUint16(b, w.ends[i])
	}
	if w.words == 1 {
		b = append(b, byte(w.n))
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(w.n))
		b = append(b, 0x80|byte(w.words))
	}
	w.buf = b
	return b
}

func putMask(b []byte, m Mask, words int) []byte {
	for i := words - 1; i >= 0; i-- {
		b = binary.BigEndian.AppendUint16(b, uint16(m>>(16*i)))
	}
	return b
}

// ReadMask reads a mask of `words` 16-bit words at the start of b.
func ReadMask(b []byte, words int) Mask { return getMask(b, words) }

func getMask(b []byte, words int) Mask {
	var m Mask
	for i := 0; i < words; i++ {
		m = m<<16 | Mask(binary.BigEndian.Uint16(b[2*i:]))
	}
	return m
}

// Reader walks a received bundle without copying.
type Reader struct {
	b     []byte
	words int
	n, i  int
	tr    int // start of the end indexes
	start int // start of the next message
}

// Open checks a bundle's structure: every end index in order and inside the
// message area, each message at least its address/interest field long.
func (r *Reader) Open(b []byte) error {
	*r = Reader{b: b}
	if len(b) < 3 {
		return fmt.Errorf("%w (%d bytes)", ErrShort, len(b))
	}
	last := b[len(b)-1]
	if last&0x80 == 0 {
		r.words, r.n = 1, int(last)
		r.tr = len(b) - 1 - 2*r.n
	} else {
		r.words = int(last & 0x7F)
		if r.words < 1 || r.words > MaxWords {
			return fmt.Errorf("%w (%d words)", ErrWords, r.words)
		}
		if len(b) < 3 {
			return ErrShort
		}
		r.n = int(binary.BigEndian.Uint16(b[len(b)-3:]))
		r.tr = len(b) - 3 - 2*r.n
	}
	head := 2 * r.words
	if r.tr < head {
		return fmt.Errorf("%w: %d messages in %d bytes", ErrCount, r.n, len(b))
	}
	prev := head
	for k := 0; k < r.n; k++ {
		end := int(binary.BigEndian.Uint16(b[r.tr+2*k:]))
		if end <= prev || end > r.tr {
			return fmt.Errorf("%w: message %d ends at %d (previous %d, area %d)", ErrIndex, k, end, prev, r.tr)
		}
		if end-prev < AddrBytes {
			return fmt.Errorf("%w: message %d is %d bytes", ErrMessage, k, end-prev)
		}
		prev = end
	}
	if prev != r.tr {
		return fmt.Errorf("%w: messages end at %d, trailer starts at %d", ErrIndex, prev, r.tr)
	}
	r.start = head
	return nil
}

// Words is the mask width of the bundle.
func (r *Reader) Words() int { return r.words }

// Count is the number of messages.
func (r *Reader) Count() int { return r.n }

// Mask is the bundle mask.
func (r *Reader) Mask() Mask { return getMask(r.b, r.words) }

// NextAddr returns the next message's address and payload (bundles toward a
// converter); ok is false after the last.
func (r *Reader) NextAddr() (addr uint16, payload []byte, ok bool) {
	msg, ok := r.next()
	if !ok {
		return 0, nil, false
	}
	return binary.BigEndian.Uint16(msg), msg[AddrBytes:], true
}

// NextMask returns the next message's interest bits and payload (bundles
// toward the hosts).
func (r *Reader) NextMask() (m Mask, payload []byte, ok bool) {
	msg, ok := r.next()
	if !ok || len(msg) < 2*r.words {
		return 0, nil, false
	}
	return getMask(msg, r.words), msg[2*r.words:], true
}

// Last is the last message, address or interest field included (nil when
// the bundle is empty); it leaves the walk where it is.
func (r *Reader) Last() []byte {
	if r.n == 0 {
		return nil
	}
	start := 2 * r.words
	if r.n > 1 {
		start = int(binary.BigEndian.Uint16(r.b[r.tr+2*(r.n-2):]))
	}
	return r.b[start:int(binary.BigEndian.Uint16(r.b[r.tr+2*(r.n-1):]))]
}

func (r *Reader) next() ([]byte, bool) {
	if r.i >= r.n {
		return nil, false
	}
	end := int(binary.BigEndian.Uint16(r.b[r.tr+2*r.i:]))
	msg := r.b[r.start:end]
	r.start = end
	r.i++
	return msg, true
}
