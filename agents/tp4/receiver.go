package tp4

import (
	"fmt"
	"math/rand/v2"
	"time"

	"protolab/agents/internal/measure"
)

// held is a DT received after a gap.
type held struct {
	data []byte
	eot  bool
}

// Receiver is the receiving transport entity of a simplex connection: it
// answers a CR with a CC, acknowledges every DT (one-for-one, or with the
// optional sequence number for a DT after a gap when both ends agreed on
// selective acknowledgement), keeps DTs after a gap while the receive
// buffer has room, reassembles TSDUs in sequence and hands them to
// OnTSDU, hands expedited TSDUs to OnExpedited at once, and answers a DR
// with a DC. No I/O, like Sender. Not safe for concurrent use.
type Receiver struct {
	cfg   Config
	state state
	why   string

	localRef, peerRef uint16
	size, credit      int
	selective         bool

	rcvNext uint32
	ooo     map[uint32]held
	partial []byte
	edNext  uint32

	out      [][]byte
	lastAK   time.Time
	lastRecv time.Time

	// OnTSDU gets each complete TSDU in order (the slice is the caller's
	// to keep); OnExpedited each expedited TSDU.
	OnTSDU      func(data []byte, now time.Time)
	OnExpedited func(data []byte, now time.Time)

	buf   measure.Level
	stats ReceiverStats
}

// ReceiverStats are the receiver's counters.
type ReceiverStats struct {
	State          string            `json:"state"`
	Reason         string            `json:"reason,omitempty"`
	Selective      bool              `json:"selective"`
	TPDUSize       int               `json:"negotiated_tpdu_size_octets"`
	Credit         int               `json:"credit_tpdus"`
	Received       map[string]uint64 `json:"tpdus_received"`
	Sent           map[string]uint64 `json:"tpdus_sent"`
	Duplicates     uint64            `json:"dt_duplicates"`
	OutOfOrder     uint64            `json:"dt_out_of_order"`
	EDDuplicates   uint64            `json:"ed_duplicates"`
	SelectiveAcks  uint64            `json:"selective_acks_sent"`
	Dropped        map[string]uint64 `json:"dropped"`
	TSDUs          int               `json:"tsdus_delivered"`
	Octets         int64             `json:"octets_delivered"`
	Expedited      int               `json:"expedited_delivered"`
	RecvBufferAvg  float64           `json:"receive_buffer_avg_octets"`
	RecvBufferMax  int               `json:"receive_buffer_max_octets"`
	RecvBufferNow  int               `json:"-"`
	Opened, Closed time.Time         `json:"-"`
}

// NewReceiver checks cfg and makes a receiver waiting for a CR.
func NewReceiver(cfg Config) (*Receiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Receiver{cfg: cfg, localRef: cfg.Ref, ooo: map[uint32]held{}}
	for r.localRef == 0 {
		r.localRef = uint16(rand.Uint32())
	}
	r.stats.Received, r.stats.Sent, r.stats.Dropped = map[string]uint64{}, map[string]uint64{}, map[string]uint64{}
	return r, nil
}

// Open says whether a connection is established.
func (r *Receiver) Open() bool { return r.state == stOpen }

// Done says whether the connection is over (disconnected or failed) and
// nothing is left to send.
func (r *Receiver) Done() bool {
	return (r.state == stClosed || r.state == stFailed) && len(r.out) == 0
}

// Err is why the connection failed, or nil.
func (r *Receiver) Err() error {
	if r.state == stFailed {
		return fmt.Errorf("tp4 receiver: %s", r.why)
	}
	return nil
}

// Stats is a copy of the counters at now. The buffer average runs from
// the CC to the DR (or now).
func (r *Receiver) Stats(now time.Time) ReceiverStats {
	st := r.stats
	st.State, st.Reason, st.Selective, st.TPDUSize, st.Credit = r.state.String(), r.why, r.selective, r.size, r.credit
	st.Received, st.Sent, st.Dropped = copyMap(st.Received), copyMap(st.Sent), copyMap(st.Dropped)
	end := now
	if !st.Closed.IsZero() {
		end = st.Closed
	}
	st.RecvBufferAvg, st.RecvBufferMax, st.RecvBufferNow = r.buf.Avg(end), r.buf.Max, r.buf.Cur
	return st
}

func (r *Receiver) send(p TPDU, now time.Time) {
	r.out = append(r.out, Encode(p))
	if p.Type == AK {
		r.lastAK = now
	}
}

func (r *Receiver) ak(now time.Time, sel bool, seq uint32) {
	p := TPDU{Type: AK, DstRef: r.peerRef, Seq: r.rcvNext, Credit: uint16(r.credit)}
	if sel {
		p.HasSel, p.Sel = true, seq
		r.stats.SelectiveAcks++
	}
	r.send(p, now)
}

// Input takes one datagram from the peer.
func (r *Receiver) Input(b []byte, now time.Time) {
	p, err := Decode(b)
	if err != nil {
		r.stats.Dropped[Reason(err)]++
		return
	}
	r.stats.Received[p.Type.String()]++
	if p.Type == CR {
		r.connect(p, now)
		return
	}
	if r.state == stIdle || p.DstRef != r.localRef {
		r.stats.Dropped["ref"]++
		return
	}
	r.lastRecv = now
	switch {
	case p.Type == DT && r.state == stOpen:
		r.data(p, now)
	case p.Type == ED && r.state == stOpen:
		switch {
		case p.Seq == r.edNext:
			r.edNext++
			r.stats.Expedited++
			if r.OnExpedited != nil {
				r.OnExpedited(append([]byte(nil), p.Data...), now)
			}
		case p.Seq < r.edNext:
			r.stats.EDDuplicates++
		default:
			r.stats.Dropped["sequence"]++
			return
		}
		r.send(TPDU{Type: EA, DstRef: r.peerRef, Seq: p.Seq}, now)
	case p.Type == DR && p.SrcRef == r.peerRef:
		if r.state == stOpen {
			r.state, r.stats.Closed = stClosed, now
			r.buf.Advance(now)
		}
		r.send(TPDU{Type: DC, DstRef: r.peerRef, SrcRef: r.localRef}, now)
	default:
		r.stats.Dropped["state"]++
	}
}

// connect answers a CR: the TPDU size is the smaller of the two, selective
// acknowledgement is used when both ends have it. A repeated CR gets the
// CC again; a CR for another connection is dropped.
func (r *Receiver) connect(p TPDU, now time.Time) {
	switch {
	case r.state == stIdle:
		if p.Class&0xF0 != 0x40 || p.Class&0x02 == 0 {
			r.stats.Dropped["class"]++
			return
		}
		size := MinTPDUSize
		if p.SizeLog != 0 {
			size = 1 << p.SizeLog
		}
		r.size = min(size, r.cfg.TPDUSize)
		r.credit = r.cfg.credit(r.size)
		r.selective = r.cfg.Ack == Selective && p.Options&OptSelective != 0
		r.peerRef, r.state, r.stats.Opened, r.lastRecv = p.SrcRef, stOpen, now, now
		r.buf.Advance(now)
	case p.SrcRef == r.peerRef && r.state == stOpen:
	default:
		r.stats.Dropped["busy"]++
		return
	}
	opts := p.Options & OptExpedited
	if r.selective {
		opts |= OptSelective
	}
	r.send(TPDU{Type: CC, DstRef: r.peerRef, SrcRef: r.localRef, Class: ClassOption,
		CDT: uint8(min(r.credit, 15)), SizeLog: SizeLog(r.size), Options: opts}, now)
	// The full credit: the CC's CDT field has only four bits.
	r.ak(now, false, 0)
}

// data takes one DT: in sequence it is reassembled (and with it every
// held DT that now follows); after a gap it is held if it is inside the
// window and the buffer has room. Every DT is answered with an AK.
func (r *Receiver) data(p TPDU, now time.Time) {
	if len(p.Data) > r.size-DTHeader {
		r.stats.Dropped["too_large"]++
		return
	}
	switch {
	case p.Seq < r.rcvNext:
		r.stats.Duplicates++
		r.ak(now, false, 0)
	case p.Seq == r.rcvNext:
		if !r.accept(p.Data, p.EOT, now) {
			return
		}
		for {
			h, ok := r.ooo[r.rcvNext]
			if !ok {
				break
			}
			delete(r.ooo, r.rcvNext)
			r.buf.Add(now, -len(h.data))
			if !r.accept(h.data, h.eot, now) {
				return
			}
		}
		r.ak(now, false, 0)
	case p.Seq-r.rcvNext >= uint32(r.credit):
		r.stats.Dropped["window"]++
	default:
		if _, ok := r.ooo[p.Seq]; ok {
			r.stats.Duplicates++
		} else if r.buf.Cur+len(p.Data) > r.cfg.RecvBuffer {
			r.stats.Dropped["buffer"]++
			return
		} else {
			r.stats.OutOfOrder++
			r.ooo[p.Seq] = held{append([]byte(nil), p.Data...), p.EOT}
			r.buf.Add(now, len(p.Data))
		}
		r.ak(now, r.selective, p.Seq)
	}
}

// accept appends the next DT in sequence to the TSDU being reassembled
// and delivers it at its end. A TSDU past the configured bound ends the
// connection (false) before its octets are kept.
func (r *Receiver) accept(data []byte, eot bool, now time.Time) bool {
	if n := len(r.partial) + len(data); n > r.cfg.maxTSDU() {
		r.stats.Dropped["tsdu_too_large"]++
		r.fail(now, fmt.Sprintf("a TSDU of more than %d octets (%d without its end)", r.cfg.maxTSDU(), n))
		return false
	}
	r.rcvNext++
	r.partial = append(r.partial, data...)
	r.buf.Add(now, len(data))
	if !eot {
		return true
	}
	t := r.partial
	r.partial = nil
	r.buf.Add(now, -len(t))
	r.stats.TSDUs++
	r.stats.Octets += int64(len(t))
	if r.OnTSDU != nil {
		r.OnTSDU(t, now)
	}
	return true
}

// fail ends the connection for why, sending one DR; the data held is let
// go (the buffer level stays as it was when the connection ended).
func (r *Receiver) fail(now time.Time, why string) {
	r.state, r.why = stFailed, why
	r.stats.Closed = now
	r.partial, r.ooo = nil, map[uint32]held{}
	r.send(TPDU{Type: DR, DstRef: r.peerRef, SrcRef: r.localRef, Reason: ReasonGiveUp}, now)
}

// Output gives the next TPDU to send at now, or nil: AKs, EAs, CC and DC
// as they were made, and a repeated AK when the window timer ran out.
func (r *Receiver) Output(now time.Time) []byte {
	if r.state == stOpen && len(r.out) == 0 {
		if !now.Before(r.lastRecv.Add(r.cfg.Inactivity)) {
			r.fail(now, fmt.Sprintf("nothing received for %v", r.cfg.Inactivity))
		} else if !now.Before(r.lastAK.Add(r.cfg.WindowTimer)) {
			r.ak(now, false, 0)
		}
	}
	if len(r.out) == 0 {
		return nil
	}
	b := r.out[0]
	r.out = r.out[1:]
	r.stats.Sent[Type(b[1]&0xF0).String()]++
	return b
}

// Deadline is when Output should be called again, or the zero time.
func (r *Receiver) Deadline(now time.Time) time.Time {
	if len(r.out) > 0 {
		return now
	}
	if r.state != stOpen {
		return time.Time{}
	}
	d := r.lastAK.Add(r.cfg.WindowTimer)
	if i := r.lastRecv.Add(r.cfg.Inactivity); i.Before(d) {
		d = i
	}
	if d.Before(now) {
		d = now
	}
	return d
}
