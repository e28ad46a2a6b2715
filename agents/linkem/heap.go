package linkem

// heldKind is what releasing a held packet means.
type heldKind uint8

const (
	kindAccept   heldKind = iota // ACCEPT verdict for a queued packet
	kindModified                 // ACCEPT with the (corrupted) packet bytes
	kindInject                   // a duplicate: send the bytes ourselves
)

// heldPkt is one packet instance waiting for its release time.
type heldPkt struct {
	release int64 // ns, emulator clock
	seq     uint64
	arrival int64
	id      uint32
	kind    heldKind
	data    []byte
}

// before orders by release time, then arrival order.
func (a *heldPkt) before(b *heldPkt) bool {
	if a.release != b.release {
		return a.release < b.release
	}
	return a.seq < b.seq
}

// pktHeap is a binary min-heap of held packets keyed by release time
// (ties in arrival order). It stores values, not pointers, so holding a
// packet allocates nothing once the slice has grown.
type pktHeap []heldPkt

func (h pktHeap) Len() int { return len(h) }

func (h *pktHeap) push(p heldPkt) {
	*h = append(*h, p)
	s := *h
	i := len(s) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !s[i].before(&s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

// min returns the earliest packet; the heap must not be empty.
func (h pktHeap) min() *heldPkt { return &h[0] }

func (h *pktHeap) pop() heldPkt {
	s := *h
	n := len(s) - 1
	top := s[0]
	s[0] = s[n]
	s[n] = heldPkt{} // drop the data reference
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].before(&s[l]) {
			m = r
		}
		if !s[m].before(&s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
