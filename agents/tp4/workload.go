package tp4

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The workload's TSDUs and expedited TSDUs carry, as user data, their
// index (4 octets) and the time the user handed them over (8 octets, Unix
// nanoseconds), then a pattern that depends on the index and the offset:
// the receiver checks every octet and measures delays from the stamp
// (sender and receiver must share a clock: containers on one host do).
const stampLen = 12

// MinTSDUSize is the smallest TSDU the workload makes.
const MinTSDUSize = stampLen

func pattern(index, i int) byte {
	x := uint32(index)*2654435761 + uint32(i)*40503
	return byte(x>>24 ^ x>>11 ^ x)
}

// MakeTSDU is the workload's TSDU number index of size octets (>=
// MinTSDUSize), stamped with now.
func MakeTSDU(index, size int, now time.Time) []byte {
	b := make([]byte, size)
	be.PutUint32(b, uint32(index))
	be.PutUint64(b[4:], uint64(now.UnixNano()))
	for i := stampLen; i < size; i++ {
		b[i] = pattern(index, i)
	}
	return b
}

// MakeExpedited is the workload's expedited TSDU number index (16 octets).
func MakeExpedited(index int, now time.Time) []byte { return MakeTSDU(index, MaxExpedited, now) }

// ErrCorrupt is a TSDU whose octets are not what the workload sent.
var ErrCorrupt = errors.New("tp4: TSDU content differs from what was sent")

// CheckTSDU verifies a workload TSDU of the expected size and returns its
// index and stamp.
func CheckTSDU(b []byte, size int) (int, time.Time, error) {
	if len(b) != size || len(b) < stampLen {
		return 0, time.Time{}, fmt.Errorf("%w: %d octets, want %d", ErrCorrupt, len(b), size)
	}
	index := int(be.Uint32(b))
	for i := stampLen; i < len(b); i++ {
		if b[i] != pattern(index, i) {
			return index, time.Time{}, fmt.Errorf("%w: TSDU %d octet %d", ErrCorrupt, index, i)
		}
	}
	return index, time.Unix(0, int64(be.Uint64(b[4:]))), nil
}

// ExpeditedEvery turns the paper's expedited data rate (expedited
// requests per normal TSDU: .33, .14, .08, ...) into "one after every N
// TSDUs", rounding halves down (.08 is 1 in 12); 0 for none.
func ExpeditedEvery(rate float64) int {
	if rate <= 0 {
		return 0
	}
	return max(1, int(math.Ceil(1/rate-0.5)))
}

// Feeder is the paper's "continuously queued" user: TSDUs are handed over
// whenever the send buffer takes them, an expedited TSDU after every
// Every-th, and the disconnect is asked for after the last.
type Feeder struct {
	TSDUs, Size, Every int

	next, eds int
	edDue     bool
}

// Feed hands over what the sender takes now.
func (f *Feeder) Feed(s *Sender, now time.Time) error {
	if !s.Open() {
		return nil
	}
	for {
		if f.edDue {
			if err := s.Expedite(MakeExpedited(f.eds, now), now); err != nil {
				return err
			}
			f.eds++
			f.edDue = false
		}
		if f.next >= f.TSDUs {
			s.Close(now)
			return nil
		}
		if !s.Accepts(f.Size) || !s.Submit(MakeTSDU(f.next, f.Size, now), now) {
			return nil
		}
		f.next++
		f.edDue = f.Every > 0 && f.next%f.Every == 0
	}
}

// Submitted is how many TSDUs and expedited TSDUs were handed over.
func (f *Feeder) Submitted() (int, int) { return f.next, f.eds }

// Meter is the receiving user: it checks every TSDU and measures Table
// 1's figures.
type Meter struct {
	Size int // expected TSDU size

	m MeterStats
}

// MeterStats are the receiving user's figures. Times as Unix seconds in
// JSON would be clutter; the report takes spans from them.
type MeterStats struct {
	TSDUs           int       `json:"tsdus"`
	Octets          int64     `json:"octets"`
	Corrupt         int       `json:"tsdus_corrupt"`
	OutOfOrder      int       `json:"tsdus_out_of_order"`
	PerOctetDelay   float64   `json:"per_octet_delay_seconds"`
	DelayMean       float64   `json:"tsdu_delay_seconds"`
	Expedited       int       `json:"expedited"`
	ExpDelayMean    float64   `json:"expedited_delay_seconds"`
	ExpDelayMax     float64   `json:"expedited_delay_max_seconds"`
	FirstSubmit     time.Time `json:"-"`
	LastDelivery    time.Time `json:"-"`
	FirstError      string    `json:"first_error,omitempty"`
	perOctet, delay float64
	expSum          float64
	nextIndex       int
}

// TSDU takes one delivered TSDU.
func (m *Meter) TSDU(b []byte, now time.Time) {
	idx, t0, err := CheckTSDU(b, m.Size)
	if err != nil {
		m.m.Corrupt++
		if m.m.FirstError == "" {
			m.m.FirstError = err.Error()
		}
		return
	}
	if idx != m.m.nextIndex {
		m.m.OutOfOrder++
		if m.m.FirstError == "" {
			m.m.FirstError = fmt.Sprintf("TSDU %d arrived, expected %d", idx, m.m.nextIndex)
		}
	}
	m.m.nextIndex = idx + 1
	if m.m.FirstSubmit.IsZero() || t0.Before(m.m.FirstSubmit) {
		m.m.FirstSubmit = t0
	}
	m.m.LastDelivery = now
	d := now.Sub(t0).Seconds()
	m.m.TSDUs++
	m.m.Octets += int64(len(b))
	m.m.delay += d
	m.m.perOctet += d / float64(len(b))
}

// Expedited takes one delivered expedited TSDU.
func (m *Meter) Expedited(b []byte, now time.Time) {
	_, t0, err := CheckTSDU(b, MaxExpedited)
	if err != nil {
		m.m.Corrupt++
		if m.m.FirstError == "" {
			m.m.FirstError = "expedited: " + err.Error()
		}
		return
	}
	d := now.Sub(t0).Seconds()
	m.m.Expedited++
	m.m.expSum += d
	m.m.ExpDelayMax = math.Max(m.m.ExpDelayMax, d)
}

// Stats are the figures so far.
func (m *Meter) Stats() MeterStats {
	s := m.m
	if s.TSDUs > 0 {
		s.PerOctetDelay, s.DelayMean = s.perOctet/float64(s.TSDUs), s.delay/float64(s.TSDUs)
	}
	if s.Expedited > 0 {
		s.ExpDelayMean = s.expSum / float64(s.Expedited)
	}
	return s
}

// Efficiency is Table 1's throughput efficiency: user octets over the
// transfer time, divided by the link speed in octets/s. The transfer time
// runs from the first TSDU's hand-over to the last one's delivery.
func (s MeterStats) Efficiency(linkBitsPerSecond float64) float64 {
	span := s.LastDelivery.Sub(s.FirstSubmit).Seconds()
	if span <= 0 || linkBitsPerSecond <= 0 {
		return 0
	}
	return float64(s.Octets) / span / (linkBitsPerSecond / 8)
}

// TransferSeconds is the span Efficiency divides by.
func (s MeterStats) TransferSeconds() float64 {
	if s.FirstSubmit.IsZero() {
		return 0
	}
	return s.LastDelivery.Sub(s.FirstSubmit).Seconds()
}
