package spims

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"protolab/agents/transport"
)

// Procedures (SPIMS application types).
const (
	ProcRequestResponse   = "request_response"
	ProcBulkGet           = "bulk_get"
	ProcConnectDisconnect = "connect_disconnect"
)

// Schema names the version of the result line.
const Schema = "protolab-spims/1"

// Job is what `protolab-spims run` reads: one measurement, JSON. Sizes
// are payload bytes (JSON numbers), times are durations with units.
// SourceData is where the sender takes data units from (the responder for
// bulk_get, the initiator's requests for request_response), DestinationData
// where the bulk_get initiator puts them; both {"access": "memory" |
// "virtual_memory" | "file", "path": "/absolute/path"}, memory when absent.
// Options are the transport's knobs; "dscp" also asks the responder to
// mark its side of the connection.
type Job struct {
	Procedure    string            `json:"procedure"`
	Transport    string            `json:"transport"`
	Target       string            `json:"target"`
	Target2      string            `json:"target2,omitempty"`
	Source       string            `json:"source,omitempty"`
	Source2      string            `json:"source2,omitempty"`
	Iterations   *int              `json:"iterations,omitempty"`
	Size         json.RawMessage   `json:"size,omitempty"`
	ResponseSize json.RawMessage   `json:"response_size,omitempty"`
	Count        int               `json:"count,omitempty"`
	Delay        json.RawMessage   `json:"delay,omitempty"`
	TimeLimit    string            `json:"time_limit,omitempty"`
	Timeout      string            `json:"timeout,omitempty"`
	LateBound    string            `json:"late_bound,omitempty"`
	Seed         int64             `json:"seed,omitempty"`
	Samples      bool              `json:"samples,omitempty"`
	Block        int               `json:"block,omitempty"` // keep each block of this many iterations' maximum
	Options      map[string]string `json:"options,omitempty"`

	SourceData      *DataSpec `json:"source_data,omitempty"`
	DestinationData *DataSpec `json:"destination_data,omitempty"`

	// bulk_get: each unit's delay (responder and initiator on one kernel),
	// the responder's counters, expedited messages amid the units.
	Delays         bool           `json:"delays,omitempty"`
	SenderCounters bool           `json:"sender_counters,omitempty"`
	Expedited      *ExpeditedSpec `json:"expedited,omitempty"`
}

// Defaults of a job's optional fields.
const (
	DefaultIterations = 1000 // SPIMS sec. 7: 1000 iterations per measurement
	DefaultTimeout    = 10 * time.Second
	DefaultLateBound  = 50 * time.Millisecond // SCIOP's goal: 50 ms maximum latency
	DefaultSize       = 32                    // request_response request payload, bytes
	DefaultUnitSize   = 1024                  // bulk_get unit, bytes (SPIMS Table 2)
	DefaultCount      = 1000                  // bulk_get units per transfer
)

// ReadJob parses a job, rejecting unknown fields.
func ReadJob(r io.Reader) (Job, error) {
	var j Job
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return j, fmt.Errorf("job: %w", err)
	}
	if dec.More() {
		return j, errors.New("job: more than one JSON value")
	}
	return j, nil
}

// Plan is a validated job with its transport resolved.
type Plan struct {
	Job          Job
	T            transport.Transport
	Limits       Limits
	Size         Dist
	ResponseSize *Dist
	Delay        *Dist
	Exchange     bool // connect_disconnect: one exchange per connection
	UnitSize     int  // bulk_get
	Count        int  // bulk_get
	Source       DataSpec
	Destination  DataSpec
	DSCP         *int // the dscp knob; nil: none
	Expedited    *ExpeditedConfig
}

// BadJob is a job that cannot run as written.
type BadJob struct{ msg string }

func (e *BadJob) Error() string { return e.msg }

func bad(format string, a ...any) error { return &BadJob{fmt.Sprintf(format, a...)} }

// Resolve validates j against the transport registry. A transport this
// host cannot run is an error wrapping transport.ErrUnavailable; anything
// else wrong is a *BadJob.
//
// Resolve stays one function: it is the job's checks in the order their errors are reported, read top to bottom.
func Resolve(j Job) (*Plan, error) {
	p := &Plan{Job: j}
	switch j.Procedure {
	case ProcRequestResponse, ProcBulkGet, ProcConnectDisconnect:
	case "":
		return nil, bad("procedure missing: request_response, bulk_get or connect_disconnect")
	default:
		return nil, bad("procedure %q: request_response, bulk_get or connect_disconnect", j.Procedure)
	}
	if j.Transport == "" {
		return nil, bad("transport missing (registered: %s)", strings.Join(transport.Names(), ", "))
	}
	t, err := transport.Get(j.Transport)
	if err != nil {
		return nil, bad("%v", err)
	}
	p.T = t
	if j.Target == "" {
		return nil, bad("target missing (host:port of the responder)")
	}
	if (j.Target2 != "" || j.Source2 != "") && j.Procedure != ProcRequestResponse {
		return nil, bad("target2/source2 (dual mode) are for request_response only")
	}
	if j.Source2 != "" && j.Target2 == "" {
		return nil, bad("source2 without target2")
	}
	props := t.Properties()
	if j.Procedure == ProcBulkGet && !props.Stream {
		return nil, bad("bulk_get over %s: %s carries one datagram per request, not a stream; use a stream transport (%s)", t.Name(), t.Name(), streamNames())
	}
	if j.Procedure == ProcConnectDisconnect && !props.Connected {
		return nil, bad("connect_disconnect over %s: %s has no connection setup to measure; use %s", t.Name(), t.Name(), streamNames())
	}
	durations := []struct {
		name string
		v    string
		def  time.Duration
		dst  *time.Duration
	}{
		{"time_limit", j.TimeLimit, 0, &p.Limits.TimeLimit},
		{"timeout", j.Timeout, DefaultTimeout, &p.Limits.Timeout},
		{"late_bound", j.LateBound, DefaultLateBound, &p.Limits.LateBound},
	}
	for _, d := range durations {
		*d.dst = d.def
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil || v < 0 {
			return nil, bad("%s %q: want a duration with its unit, e.g. \"30s\"", d.name, d.v)
		}
		*d.dst = v
	}
	if j.Block < 0 {
		return nil, bad("block %d: a number of iterations >= 0", j.Block)
	}
	p.Limits.Block = j.Block
	if p.Limits.Timeout <= 0 {
		return nil, bad("timeout must be > 0")
	}
	switch {
	case j.Iterations == nil && p.Limits.TimeLimit == 0:
		p.Limits.Iterations = DefaultIterations
	case j.Iterations == nil:
		p.Limits.Iterations = 0 // until the time limit
	case *j.Iterations < 0:
		return nil, bad("iterations %d: want >= 0 (0: until time_limit)", *j.Iterations)
	case *j.Iterations == 0 && p.Limits.TimeLimit == 0:
		return nil, bad("iterations 0 runs until time_limit, which is missing")
	default:
		p.Limits.Iterations = *j.Iterations
	}
	maxPayload := MaxPayload(t)
	sizeDefault := DefaultSize
	if j.Procedure == ProcBulkGet {
		sizeDefault = DefaultUnitSize
	}
	p.Size = Const(float64(sizeDefault), Bytes)
	if len(j.Size) > 0 {
		if p.Size, err = ParseDist(j.Size, Bytes); err != nil {
			return nil, bad("size: %v", err)
		}
	}
	if p.Size.Max() > float64(maxPayload) && p.Size.Kind != DistNormal && p.Size.Kind != DistExponential {
		return nil, bad("size: up to %v bytes, more than one %s message carries (%d)", p.Size.Max(), t.Name(), maxPayload)
	}
	if len(j.ResponseSize) > 0 {
		if j.Procedure == ProcBulkGet {
			return nil, bad("response_size is not for bulk_get (size is the unit, count the units)")
		}
		d, err := ParseDist(j.ResponseSize, Bytes)
		if err != nil {
			return nil, bad("response_size: %v", err)
		}
		if d.Max() > float64(maxPayload) && d.Kind != DistNormal && d.Kind != DistExponential {
			return nil, bad("response_size: up to %v bytes, more than one %s message carries (%d)", d.Max(), t.Name(), maxPayload)
		}
		p.ResponseSize = &d
	}
	if len(j.Delay) > 0 {
		if j.Procedure == ProcBulkGet {
			return nil, bad("delay is not for bulk_get")
		}
		d, err := ParseDist(j.Delay, Seconds)
		if err != nil {
			return nil, bad("delay: %v", err)
		}
		p.Delay = &d
	}
	switch j.Procedure {
	case ProcBulkGet:
		if p.Size.Kind != DistConstant || p.Size.A != math.Trunc(p.Size.A) {
			return nil, bad("bulk_get: size must be a constant whole number of bytes per unit")
		}
		p.UnitSize, p.Count = int(p.Size.A), DefaultCount
		if j.Count != 0 {
			p.Count = j.Count
		}
		if p.Count < 1 {
			return nil, bad("count %d: want >= 1 units", j.Count)
		}
		if int64(p.Count) > math.MaxUint32 {
			return nil, bad("count %d: at most %d units (a 32-bit field on the wire)", p.Count, uint32(math.MaxUint32))
		}
		if (j.Delays || j.Expedited != nil) && p.Count > MaxStampedUnits {
			return nil, bad("count %d with delays: at most %d units, whose hand-over times the responder sends in one message", p.Count, MaxStampedUnits)
		}
	case ProcConnectDisconnect:
		p.Exchange = len(j.Size) > 0 || len(j.ResponseSize) > 0
		fallthrough
	default:
		if j.Count != 0 {
			return nil, bad("count is for bulk_get")
		}
	}
	if (j.Delays || j.SenderCounters || j.Expedited != nil) && j.Procedure != ProcBulkGet {
		return nil, bad("delays, sender_counters and expedited are for bulk_get")
	}
	if j.Expedited != nil {
		if p.Expedited, err = j.Expedited.resolve(t); err != nil {
			return nil, err
		}
	}
	if err := transport.CheckKnobs(t, j.Options); err != nil {
		return nil, bad("options: %v", err)
	}
	if v, ok := j.Options["dscp"]; ok {
		d, err := transport.ParseDSCP(v)
		if err != nil {
			return nil, bad("options: %v", err)
		}
		p.DSCP = &d
	}
	if err := resolveData(p); err != nil {
		return nil, err
	}
	if err := t.Available(); err != nil {
		return nil, err
	}
	return p, nil
}

// resolveData checks source_data and destination_data, and the files on
// this side: a request source must be there and not empty, a bulk
// destination's directory must exist.
func resolveData(p *Plan) error {
	j := p.Job
	p.Source, p.Destination = DataSpec{Access: AccessMemory}, DataSpec{Access: AccessMemory}
	if j.SourceData != nil {
		if j.Procedure == ProcConnectDisconnect {
			return bad("source_data is for request_response (the initiator's requests) and bulk_get (the responder's units)")
		}
		if err := j.SourceData.check("source_data"); err != nil {
			return bad("%v", err)
		}
		p.Source = *j.SourceData
		if j.Target2 != "" && p.Source.Access != AccessMemory {
			return bad("source_data %s with target2: dual mode sends one request buffer on both paths, from memory only", p.Source)
		}
		if j.Procedure == ProcRequestResponse && p.Source.Access == AccessFile {
			src, err := openFileSource(p.Source.Path)
			if err != nil {
				return bad("source_data: %v", err)
			}
			src.Close()
		}
	}
	if j.DestinationData != nil {
		if j.Procedure != ProcBulkGet {
			return bad("destination_data is for bulk_get (where the initiator puts the units it receives)")
		}
		if err := j.DestinationData.check("destination_data"); err != nil {
			return bad("%v", err)
		}
		p.Destination = *j.DestinationData
		if p.Destination.Access == AccessFile {
			if err := checkDestination(p.Destination.Path); err != nil {
				return bad("destination_data: %v", err)
			}
		}
	}
	return nil
}

func streamNames() string {
	var out []string
	for _, n := range transport.Names() {
		if t, _ := transport.Get(n); t.Properties().Stream {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// ParseJob reads and resolves a job from JSON bytes.
func ParseJob(b []byte) (*Plan, error) {
	j, err := ReadJob(bytes.NewReader(b))
	if err != nil {
		return nil, &BadJob{err.Error()}
	}
	return Resolve(j)
}

// Run dials the plan's target(s), runs its procedure and returns the
// result. The connections are closed when it returns.
func Run(ctx context.Context, p *Plan, live *Live) (*Result, error) {
	j := p.Job
	o := transport.Options{Knobs: j.Options}
	rr := RRConfig{Limits: p.Limits, Size: p.Size, ResponseSize: p.ResponseSize, Delay: p.Delay, Seed: j.Seed, MaxPayload: MaxPayload(p.T), Source: p.Source, DSCP: p.DSCP}
	res := newResult(p)
	var out *Outcome
	var err error
	switch j.Procedure {
	case ProcConnectDisconnect:
		path := &Path{Target: j.Target, Source: j.Source}
		o.Source = j.Source
		out, err = ConnectDisconnect(ctx, p.T, j.Target, o, CDConfig{RRConfig: rr, Exchange: p.Exchange}, live, func(c transport.Conn) {
			res.Paths = []PathResult{pathResult(path, c)}
		})
		if res.Paths == nil {
			res.Paths = []PathResult{pathResult(path, nil)}
		}
	default:
		paths := []*Path{{Target: j.Target, Source: j.Source}}
		if j.Target2 != "" {
			paths = append(paths, &Path{Target: j.Target2, Source: j.Source2})
		}
		if err := dialPaths(ctx, p.T, paths, o, p.Limits.Timeout); err != nil {
			// a result all the same: nothing measured, each path's error (a
			// transfer over a channel no handshake survives delivered nothing,
			// and says so, rather than leaving its caller without a result)
			for _, pa := range paths {
				res.Paths = append(res.Paths, pathResult(pa, nil))
			}
			res.Stopped, res.Error = "error", err.Error()
			return res, err
		}
		defer func() {
			for _, pa := range paths {
				if pa.Conn != nil {
					pa.Conn.Close()
				}
			}
		}()
		if j.Procedure == ProcBulkGet {
			bc := BulkConfig{Limits: p.Limits, Count: p.Count, UnitSize: p.UnitSize, Source: p.Source,
				Destination: p.Destination, DSCP: p.DSCP, Delays: j.Delays, SenderCounters: j.SenderCounters}
			if p.Expedited != nil {
				e := *p.Expedited
				eo := o
				eo.Source = j.Source // the second connection from where the first is
				e.Dial = func(ctx context.Context) (transport.Conn, error) { return p.T.Dial(ctx, j.Target, eo) }
				bc.Expedited = &e
			}
			out, err = BulkGet(ctx, paths[0].Conn, bc, live)
		} else {
			out, err = RequestResponse(ctx, paths, rr, live)
		}
		for _, pa := range paths {
			res.Paths = append(res.Paths, pathResult(pa, pa.Conn))
		}
	}
	if out != nil {
		res.fill(out, j.Samples)
	}
	if err != nil {
		res.Stopped, res.Error = "error", err.Error()
		return res, err
	}
	return res, nil
}

// dialPaths connects every path; one that fails keeps its error (dual mode
// goes on without it) unless all fail.
func dialPaths(ctx context.Context, t transport.Transport, paths []*Path, o transport.Options, timeout time.Duration) error {
	ok := false
	for _, pa := range paths {
		po := o
		po.Source = pa.Source
		dctx, cancel := context.WithTimeout(ctx, timeout)
		pa.Conn, pa.Err = t.Dial(dctx, pa.Target, po)
		cancel()
		ok = ok || pa.Err == nil
	}
	if !ok {
		return fmt.Errorf("no path connected: %s", pathErrors(paths))
	}
	return nil
}
