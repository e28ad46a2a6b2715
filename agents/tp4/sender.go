package tp4

import (
	"fmt"
	"math/rand/v2"
	"time"

	"protolab/agents/internal/measure"
)

// state of an entity.
type state uint8

const (
	stIdle state = iota
	stConnecting
	stOpen
	stClosing
	stClosed
	stFailed
)

var stateNames = [...]string{"idle", "connecting", "open", "closing", "closed", "failed"}

func (s state) String() string { return stateNames[s] }

// dtRec is one DT TPDU of the send queue, from segmentation until its
// cumulative acknowledgement.
type dtRec struct {
	seq      uint32
	data     []byte
	eot      bool
	edMark   int       // expedited requests the user made before this TSDU
	sent     int       // transmissions so far
	deadline time.Time // retransmission timer
	acked    bool      // confirmed by a selective AK
}

// edRec is one expedited TSDU.
type edRec struct {
	seq      uint32
	data     []byte
	sent     int
	first    time.Time
	deadline time.Time
}

// Sender is the sending transport entity of a simplex connection: it
// connects (CR), segments TSDUs into DTs, keeps each DT until it is
// acknowledged with its own retransmission timer, sends expedited data by
// the ISO or the NBS rule, and disconnects (DR) once everything was
// acknowledged and Close was asked for. It does no I/O: feed it datagrams
// with Input, take TPDUs from Output until it returns nil, and call again
// at Deadline. Not safe for concurrent use.
type Sender struct {
	cfg   Config
	state state
	why   string

	localRef, peerRef uint16
	size, maxData     int
	selective         bool

	recs  []*dtRec // unacknowledged DTs in sequence order; recs[:nsent] were sent
	nsent int
	una   uint32 // lowest unacknowledged sequence number
	edge  uint32 // upper window edge: DTs below it may be sent
	next  uint32 // next sequence number to assign

	edQueue     []*edRec
	edOut       *edRec
	edSeq       uint32
	edSubmitted int
	edAcked     int

	ctl      []byte // a pending control TPDU (DC, DR after giving up)
	ctlSent  int
	ctlDue   time.Time
	closeReq bool
	nextSend time.Time

	buf   measure.Level
	stats SenderStats
}

// SenderStats are the sender's counters; times are zero until they happen.
type SenderStats struct {
	State              string            `json:"state"`
	Reason             string            `json:"reason,omitempty"`
	Selective          bool              `json:"selective"`
	TPDUSize           int               `json:"negotiated_tpdu_size_octets"`
	Credit             int               `json:"credit_tpdus"`
	TSDUs              int               `json:"tsdus_submitted"`
	Octets             int64             `json:"octets_submitted"`
	Sent               map[string]uint64 `json:"tpdus_sent"`
	Received           map[string]uint64 `json:"tpdus_received"`
	DTRetransmissions  uint64            `json:"dt_retransmissions"`
	EDRetransmissions  uint64            `json:"ed_retransmissions"`
	CtlRetransmissions uint64            `json:"control_retransmissions"`
	SelectiveAcks      uint64            `json:"selective_acks_received"`
	OctetsSent         uint64            `json:"octets_sent"`
	Dropped            map[string]uint64 `json:"dropped"`
	EDAcked            int               `json:"expedited_acknowledged"`
	EDRoundTripSum     float64           `json:"-"`
	EDRoundTripMean    float64           `json:"expedited_round_trip_seconds"`
	FirstSubmit        time.Time         `json:"-"`
	AllAcked           time.Time         `json:"-"`
	SendBufferAvg      float64           `json:"send_buffer_avg_octets"`
	SendBufferMax      int               `json:"send_buffer_max_octets"`
	SendBufferNow      int               `json:"-"`
}

// NewSender checks cfg and makes an idle sender.
func NewSender(cfg Config) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sender{cfg: cfg, localRef: cfg.Ref}
	for s.localRef == 0 {
		s.localRef = uint16(rand.Uint32())
	}
	s.stats.Sent, s.stats.Received, s.stats.Dropped = map[string]uint64{}, map[string]uint64{}, map[string]uint64{}
	return s, nil
}

// Connect starts the connection: the CR goes at the next Output.
func (s *Sender) Connect(now time.Time) {
	if s.state == stIdle {
		s.state, s.ctlDue = stConnecting, now
	}
}

// Open says whether the connection is established (CC received).
func (s *Sender) Open() bool { return s.state == stOpen || s.state == stClosing }

// Done says whether the connection is over (closed or failed).
func (s *Sender) Done() bool { return (s.state == stClosed || s.state == stFailed) && s.ctl == nil }

// Err is why the connection failed, or nil.
func (s *Sender) Err() error {
	if s.state == stFailed {
		return fmt.Errorf("tp4 sender: %s", s.why)
	}
	return nil
}

// Accepts says whether a TSDU of n octets fits in the send buffer now (an
// empty buffer takes any size).
func (s *Sender) Accepts(n int) bool {
	if s.state == stClosed || s.state == stFailed || s.closeReq {
		return false
	}
	return s.buf.Cur == 0 || s.buf.Cur+n <= s.cfg.SendBuffer
}

// Submit hands one TSDU to the sender; false when it does not fit (see
// Accepts). The data is copied.
func (s *Sender) Submit(tsdu []byte, now time.Time) bool {
	if !s.Accepts(len(tsdu)) || !s.Open() {
		return false
	}
	if s.stats.FirstSubmit.IsZero() {
		s.stats.FirstSubmit = now
	}
	s.stats.AllAcked = time.Time{}
	data := append([]byte(nil), tsdu...)
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), s.maxData)
		s.recs = append(s.recs, &dtRec{seq: s.next, data: data[:n:n], eot: n == len(data), edMark: s.edSubmitted})
		s.next++
		data = data[n:]
	}
	s.buf.Add(now, len(tsdu))
	s.stats.TSDUs++
	s.stats.Octets += int64(len(tsdu))
	return true
}

// Expedite hands one expedited TSDU (at most MaxExpedited octets) to the
// sender; it goes ahead of all normal data.
func (s *Sender) Expedite(data []byte, now time.Time) error {
	if len(data) > MaxExpedited {
		return fmt.Errorf("tp4: expedited TSDU of %d octets, at most %d", len(data), MaxExpedited)
	}
	if !s.Open() || s.closeReq {
		return fmt.Errorf("tp4: expedited data on a connection that is %s", s.state)
	}
	s.edQueue = append(s.edQueue, &edRec{seq: s.edSeq, data: append([]byte(nil), data...)})
	s.edSeq++
	s.edSubmitted++
	return nil
}

// Close asks for the disconnect once all data was acknowledged.
func (s *Sender) Close(now time.Time) { s.closeReq = true }

// Stats is a copy of the counters at now.
func (s *Sender) Stats(now time.Time) SenderStats {
	st := s.stats
	st.State, st.Reason, st.Selective, st.TPDUSize = s.state.String(), s.why, s.selective, s.size
	st.Credit = int(s.edge - s.una)
	st.Sent, st.Received, st.Dropped = copyMap(st.Sent), copyMap(st.Received), copyMap(st.Dropped)
	st.SendBufferAvg, st.SendBufferMax, st.SendBufferNow = s.buf.Avg(now), s.buf.Max, s.buf.Cur
	if st.EDAcked > 0 {
		st.EDRoundTripMean = st.EDRoundTripSum / float64(st.EDAcked)
	}
	return st
}

func copyMap(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// fail ends the connection, sending one DR.
func (s *Sender) fail(why string) {
	if s.state == stFailed {
		return
	}
	s.state, s.why = stFailed, why
	if s.peerRef != 0 {
		s.ctl = Encode(TPDU{Type: DR, DstRef: s.peerRef, SrcRef: s.localRef, Reason: ReasonGiveUp})
	}
}

// Input takes one datagram from the peer.
func (s *Sender) Input(b []byte, now time.Time) {
	p, err := Decode(b)
	if err != nil {
		s.stats.Dropped[Reason(err)]++
		return
	}
	s.stats.Received[p.Type.String()]++
	if p.DstRef != s.localRef {
		s.stats.Dropped["ref"]++
		return
	}
	switch {
	case p.Type == CC && s.state == stConnecting:
		size := MinTPDUSize
		if p.SizeLog != 0 {
			size = 1 << p.SizeLog
		}
		if size > s.cfg.TPDUSize {
			s.fail(fmt.Sprintf("CC raised the TPDU size to %d octets", size))
			return
		}
		s.peerRef, s.size, s.maxData = p.SrcRef, size, size-DTHeader
		s.selective = s.cfg.Ack == Selective && p.Options&OptSelective != 0
		s.edge = min(uint32(p.CDT), uint32(s.cfg.credit(size)))
		s.state, s.ctlSent = stOpen, 0
	case p.Type == CC:
		s.stats.Dropped["duplicate"]++
	case p.Type == AK && s.Open():
		s.ack(p, now)
	case p.Type == EA && s.Open():
		if s.edOut == nil || p.Seq != s.edOut.seq {
			s.stats.Dropped["duplicate"]++
			return
		}
		s.stats.EDAcked++
		s.stats.EDRoundTripSum += now.Sub(s.edOut.first).Seconds()
		s.edOut = nil
		s.edAcked++
	case p.Type == DC && s.state == stClosing:
		s.state = stClosed
	case p.Type == DR && s.state != stClosed && s.state != stFailed:
		s.state, s.why = stFailed, fmt.Sprintf("peer disconnected (reason 0x%02x)", p.Reason)
		s.ctl = Encode(TPDU{Type: DC, DstRef: p.SrcRef, SrcRef: s.localRef})
	default:
		s.stats.Dropped["state"]++
	}
}

// ack applies an AK: the cumulative sequence number releases every DT
// below it, the credit moves the upper window edge, the optional sequence
// number (selective mode) confirms one DT after a gap.
func (s *Sender) ack(p TPDU, now time.Time) {
	if p.Seq > s.next {
		s.stats.Dropped["value"]++
		return
	}
	if p.Seq >= s.una {
		n := 0
		for n < len(s.recs) && s.recs[n].seq < p.Seq {
			if !s.recs[n].acked {
				s.buf.Add(now, -len(s.recs[n].data))
			}
			n++
		}
		s.recs = s.recs[n:]
		s.nsent = max(0, s.nsent-n)
		s.una = p.Seq
		s.edge = p.Seq + min(uint32(p.Credit), uint32(s.cfg.credit(s.size)))
	}
	if p.HasSel && s.selective {
		s.stats.SelectiveAcks++
		if p.Sel >= s.una && int(p.Sel-s.una) < s.nsent {
			if r := s.recs[p.Sel-s.una]; !r.acked {
				r.acked = true
				s.buf.Add(now, -len(r.data))
			}
		}
	}
	if len(s.recs) == 0 && s.stats.TSDUs > 0 && s.stats.AllAcked.IsZero() {
		s.stats.AllAcked = now
	}
}

// action is what Output would send next.
type action uint8

const (
	actNone action = iota
	actCtl
	actCR
	actDR
	actEDNew
	actEDRe
	actDTRe
	actDTNew
)

// pick chooses the next TPDU to send at now, pacing aside: control, then
// expedited data (ahead of all normal data), then the lowest expired DT,
// then a new DT if the window and the expedited rule allow it.
func (s *Sender) pick(now time.Time) (action, int) {
	if s.ctl != nil {
		return actCtl, 0
	}
	switch s.state {
	case stConnecting:
		if !now.Before(s.ctlDue) {
			return actCR, 0
		}
		return actNone, 0
	case stClosing:
		if !now.Before(s.ctlDue) {
			return actDR, 0
		}
		return actNone, 0
	case stOpen:
	default:
		return actNone, 0
	}
	if s.edOut == nil && len(s.edQueue) > 0 {
		return actEDNew, 0
	}
	if s.edOut != nil && !now.Before(s.edOut.deadline) {
		return actEDRe, 0
	}
	for i, r := range s.recs[:s.nsent] {
		if !r.acked && !now.Before(r.deadline) {
			return actDTRe, i
		}
	}
	if s.nsent < len(s.recs) {
		r := s.recs[s.nsent]
		if r.seq < s.edge && s.mayGo(r) {
			return actDTNew, s.nsent
		}
	}
	if s.closeReq && len(s.recs) == 0 && s.edOut == nil && len(s.edQueue) == 0 {
		return actDR, 0
	}
	return actNone, 0
}

// mayGo is the expedited rule for a DT's first transmission. ISO: nothing
// new while any expedited TSDU is queued or unacknowledged. NBS: a DT may
// go when every expedited TSDU the user gave before its TSDU is
// acknowledged.
func (s *Sender) mayGo(r *dtRec) bool {
	if s.cfg.Expedited == ExpNBS {
		return r.edMark <= s.edAcked
	}
	return s.edAcked == s.edSubmitted
}

// gives up on a TPDU sent N times whose timer ran out.
func (s *Sender) expire(now time.Time) {
	n := s.cfg.MaxTransmissions
	switch {
	case (s.state == stConnecting || s.state == stClosing) && s.ctlSent >= n && !now.Before(s.ctlDue):
		if s.state == stClosing {
			// Everything was acknowledged; only the DC is missing.
			s.state, s.why = stClosed, fmt.Sprintf("no DC after %d DRs", n)
			return
		}
		s.fail(fmt.Sprintf("no CC after %d CRs", n))
	case s.state == stOpen:
		if e := s.edOut; e != nil && e.sent >= n && !now.Before(e.deadline) {
			s.fail(fmt.Sprintf("ED %d unacknowledged after %d transmissions", e.seq, n))
			return
		}
		for _, r := range s.recs[:s.nsent] {
			if !r.acked && r.sent >= n && !now.Before(r.deadline) {
				s.fail(fmt.Sprintf("DT %d unacknowledged after %d transmissions", r.seq, n))
				return
			}
		}
	}
}

// Output gives the next TPDU to send at now, or nil.
func (s *Sender) Output(now time.Time) []byte {
	s.expire(now)
	act, i := s.pick(now)
	if act == actNone || (s.cfg.PaceBitsPerSecond > 0 && now.Before(s.nextSend)) {
		return nil
	}
	var b []byte
	rto := now.Add(s.cfg.Retransmit)
	switch act {
	case actCtl:
		b, s.ctl = s.ctl, nil
	case actCR:
		opts := uint8(OptExpedited)
		if s.cfg.Ack == Selective {
			opts |= OptSelective
		}
		b = Encode(TPDU{Type: CR, SrcRef: s.localRef, Class: ClassOption, CDT: 0,
			SizeLog: SizeLog(s.cfg.TPDUSize), Options: opts})
		s.ctlSent++
		s.ctlDue = rto
		if s.ctlSent > 1 {
			s.stats.CtlRetransmissions++
		}
	case actDR:
		if s.state == stOpen {
			s.state, s.ctlSent = stClosing, 0
		}
		b = Encode(TPDU{Type: DR, DstRef: s.peerRef, SrcRef: s.localRef, Reason: ReasonNormal})
		s.ctlSent++
		s.ctlDue = rto
		if s.ctlSent > 1 {
			s.stats.CtlRetransmissions++
		}
	case actEDNew, actEDRe:
		if act == actEDNew {
			s.edOut, s.edQueue = s.edQueue[0], s.edQueue[1:]
			s.edOut.first = now
		} else {
			s.stats.EDRetransmissions++
		}
		e := s.edOut
		b = Encode(TPDU{Type: ED, DstRef: s.peerRef, Seq: e.seq, EOT: true, Data: e.data})
		e.sent++
		e.deadline = rto
	case actDTRe, actDTNew:
		r := s.recs[i]
		if act == actDTNew {
			s.nsent++
		} else {
			s.stats.DTRetransmissions++
		}
		b = Encode(TPDU{Type: DT, DstRef: s.peerRef, Seq: r.seq, EOT: r.eot, Data: r.data})
		r.sent++
		r.deadline = rto
	}
	if p := s.cfg.PaceBitsPerSecond; p > 0 {
		if s.nextSend.Before(now) {
			s.nextSend = now
		}
		s.nextSend = s.nextSend.Add(time.Duration(float64(len(b)+s.cfg.Overhead) * 8 / p * float64(time.Second)))
	}
	s.stats.Sent[Type(b[1]&0xF0).String()]++
	s.stats.OctetsSent += uint64(len(b))
	return b
}

// Deadline is when Output should be called again (a timer runs out or the
// pacing allows the next TPDU), or the zero time when nothing is pending.
func (s *Sender) Deadline(now time.Time) time.Time {
	var d time.Time
	at := func(t time.Time) {
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	if act, _ := s.pick(now); act != actNone {
		if s.cfg.PaceBitsPerSecond > 0 && s.nextSend.After(now) {
			at(s.nextSend)
		} else {
			at(now)
		}
	}
	// A timer that has run out is pick's business (and may wait for the
	// pace); the future ones are the deadlines.
	timer := func(t time.Time) {
		if t.After(now) {
			at(t)
		}
	}
	switch s.state {
	case stConnecting, stClosing:
		timer(s.ctlDue)
	case stOpen:
		if s.edOut != nil {
			timer(s.edOut.deadline)
		}
		for _, r := range s.recs[:s.nsent] {
			if !r.acked {
				timer(r.deadline)
			}
		}
	}
	if !d.IsZero() && d.Before(now) {
		d = now
	}
	return d
}
