package spims

import (
	"encoding/json"
	"io"

	"protolab/agents/internal/measure"
	"protolab/agents/transport"
)

// Result is the one JSON line of `protolab-spims run`. Times are seconds,
// rates per second, sizes bytes; wall-clock marks are Unix nanoseconds of
// an iteration's start (to align with a fault schedule).
type Result struct {
	Schema           string            `json:"schema"`
	Procedure        string            `json:"procedure"`
	Transport        string            `json:"transport"`
	Dual             bool              `json:"dual"`
	Size             string            `json:"size"`
	ResponseSize     string            `json:"response_size,omitempty"`
	Delay            string            `json:"delay,omitempty"`
	Seed             int64             `json:"seed"`
	Options          map[string]string `json:"options"`                    // the transport knobs asked for (paths[].tuning has what is in force)
	SourceData       *DataSpec         `json:"source_data,omitempty"`      // request_response, bulk_get
	DestinationData  *DataSpec         `json:"destination_data,omitempty"` // bulk_get
	Iterations       int               `json:"iterations"`                 // asked for; 0: until time_limit
	TimeLimitSeconds Float             `json:"time_limit_seconds"`
	TimeoutSeconds   Float             `json:"timeout_seconds"`
	LateBoundSeconds Float             `json:"late_bound_seconds"`
	Stopped          string            `json:"stopped"` // iterations | time_limit | interrupted | error
	Error            string            `json:"error,omitempty"`
	StartUnixNs      int64             `json:"start_unix_ns"`
	ElapsedSeconds   Float             `json:"elapsed_seconds"`
	Completed        int               `json:"completed"`
	Timeouts         int               `json:"timeouts"`
	Late             int               `json:"late"`
	RatePerSecond    Float             `json:"rate_per_second"` // completed iterations per second of the run
	Seconds          Stats             `json:"seconds"`         // per completed iteration: round trip, transfer, or connect+close
	LateAtUnixNs     []int64           `json:"late_at_unix_ns"`
	LateSeconds      []float64         `json:"late_seconds"`      // each late iteration's seconds, beside late_at_unix_ns
	BlockMaxSeconds  []float64         `json:"block_max_seconds"` // per block of the job's `block` iterations: the maximum
	Histogram        []measure.Bucket  `json:"histogram"`         // every completed iteration's seconds, log buckets (16 per octave), the non-empty ones
	TimeoutAtUnixNs  []int64           `json:"timeout_at_unix_ns"`
	MarksNotKept     int               `json:"marks_not_kept"`
	SentBytes        int64             `json:"sent_bytes"`
	ReceivedBytes    int64             `json:"received_bytes"`
	Bulk             *BulkResult       `json:"bulk,omitempty"`
	Paths            []PathResult      `json:"paths"`
	Samples          []float64         `json:"samples_seconds,omitempty"`
}

// BulkResult are bulk_get's figures.
type BulkResult struct {
	Units                  int   `json:"units"`
	UnitBytes              int   `json:"unit_bytes"`
	TransferBytes          int64 `json:"transfer_bytes"`
	ReceiverBytesPerSecond Stats `json:"receiver_bytes_per_second"`
	SenderBytesPerSecond   Stats `json:"sender_bytes_per_second"`
	// delays (one kernel's CLOCK_MONOTONIC): each unit's from the return
	// of the responder's write of it (all of it in the transport's hands)
	// to its read here, and that over the unit's size averaged (Table 1's
	// per-octet delay); complete transfers only. The write returns a few
	// microseconds after the kernel queued the unit: over loopback a
	// unit's delay may be that much below zero.
	UnitDelaySeconds     *Stats `json:"unit_delay_seconds,omitempty"`
	PerOctetDelaySeconds *Float `json:"per_octet_delay_seconds,omitempty"`
	// sender_counters: the responder's connection counters' increments
	// over the transfers (tcp: retransmitted_segments; quic: packets_lost)
	SenderCounters map[string]uint64 `json:"sender_counters,omitempty"`
	Expedited      *ExpeditedResult  `json:"expedited,omitempty"`
}

// PathResult is one connection of the run (two in dual mode).
type PathResult struct {
	Target   string            `json:"target"`
	Source   string            `json:"source,omitempty"`
	Local    string            `json:"local,omitempty"`
	Remote   string            `json:"remote,omitempty"`
	Error    string            `json:"error,omitempty"`
	Wins     int               `json:"wins"`
	Skipped  int               `json:"skipped"`
	Tuning   map[string]string `json:"tuning"`
	Counters map[string]uint64 `json:"counters"`
}

func newResult(p *Plan) *Result {
	j := p.Job
	r := &Result{
		Schema: Schema, Procedure: j.Procedure, Transport: p.T.Name(), Dual: j.Target2 != "",
		Size: p.Size.String(), Seed: j.Seed, Options: map[string]string{}, Iterations: p.Limits.Iterations,
		TimeLimitSeconds: Float(p.Limits.TimeLimit.Seconds()), TimeoutSeconds: Float(p.Limits.Timeout.Seconds()),
		LateBoundSeconds: Float(p.Limits.LateBound.Seconds()),
		LateAtUnixNs:     []int64{}, TimeoutAtUnixNs: []int64{}, Paths: []PathResult{},
		LateSeconds: []float64{}, BlockMaxSeconds: []float64{}, Histogram: []measure.Bucket{},
	}
	switch {
	case p.ResponseSize != nil:
		r.ResponseSize = p.ResponseSize.String()
	case j.Procedure == ProcRequestResponse || p.Exchange:
		r.ResponseSize = "as the request"
	}
	for k, v := range j.Options {
		r.Options[k] = v
	}
	if p.Delay != nil {
		r.Delay = p.Delay.String()
	}
	if j.Procedure == ProcConnectDisconnect && !p.Exchange {
		r.Size = "no exchange"
	}
	if j.Procedure != ProcConnectDisconnect {
		src := p.Source.orMemory()
		r.SourceData = &src
	}
	if j.Procedure == ProcBulkGet {
		dst := p.Destination.orMemory()
		r.DestinationData = &dst
		r.Bulk = &BulkResult{Units: p.Count, UnitBytes: p.UnitSize, TransferBytes: int64(p.Count) * int64(p.UnitSize)}
	}
	return r
}

// fill copies what a procedure measured into the result.
func (r *Result) fill(o *Outcome, samples bool) {
	rec := o.Rec
	r.Stopped = o.Stopped
	r.StartUnixNs = o.Start.UnixNano()
	r.ElapsedSeconds = Float(o.Elapsed.Seconds())
	r.Completed, r.Timeouts, r.Late = rec.Count(), rec.timeouts, rec.late
	if o.Elapsed > 0 {
		r.RatePerSecond = Float(float64(rec.Count()) / o.Elapsed.Seconds())
	}
	r.Seconds = rec.Stats()
	r.LateAtUnixNs = append(r.LateAtUnixNs, rec.lateAt...)
	r.LateSeconds = append(r.LateSeconds, rec.lateD...)
	r.BlockMaxSeconds = append(r.BlockMaxSeconds, rec.blockMax...)
	r.Histogram = rec.hist.Buckets()
	r.TimeoutAtUnixNs = append(r.TimeoutAtUnixNs, rec.timeoutAt...)
	r.MarksNotKept = rec.marksShort
	r.SentBytes, r.ReceivedBytes = o.SentBytes, o.RecvBytes
	if o.Bulk != nil && r.Bulk != nil {
		r.Bulk.ReceiverBytesPerSecond = Summarize(o.Bulk.Receiver)
		r.Bulk.SenderBytesPerSecond = Summarize(o.Bulk.Sender)
		if o.Bulk.UnitDelays != nil {
			st := Summarize(o.Bulk.UnitDelays)
			po := Float(float64(st.Mean) / float64(r.Bulk.UnitBytes))
			r.Bulk.UnitDelaySeconds, r.Bulk.PerOctetDelaySeconds = &st, &po
		}
		r.Bulk.SenderCounters = o.Bulk.SenderCounters
		r.Bulk.Expedited = o.Bulk.Expedited
	}
	if samples {
		r.Samples = rec.Samples()
		if r.Samples == nil {
			r.Samples = []float64{}
		}
	}
}

func pathResult(p *Path, c transport.Conn) PathResult {
	pr := PathResult{Target: p.Target, Source: p.Source, Wins: p.Wins, Skipped: p.Skipped, Tuning: map[string]string{}, Counters: map[string]uint64{}}
	if p.Err != nil {
		pr.Error = p.Err.Error()
	}
	if c != nil {
		pr.Local, pr.Remote = c.LocalAddr().String(), c.RemoteAddr().String()
		pr.Tuning, pr.Counters = c.Tuning(), c.Counters()
	}
	return pr
}

// Write prints r as one JSON line.
func (r *Result) Write(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
