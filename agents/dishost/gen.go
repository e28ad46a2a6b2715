package dishost

import (
	"fmt"
	"math/rand"
	"sort"
	"time"

	"protolab/agents/dis"
	"protolab/agents/internal/measure"
	"protolab/agents/syntax"
	_ "protolab/agents/syntax/aper"  // registers per (aligned PER)
	_ "protolab/agents/syntax/asn1c" // registers ber, der, uper (cgo builds)
)

// Generator builds the messages of N simulated entities. It is not safe for
// concurrent use; Next does not allocate.
type Generator struct {
	plan     Plan
	size     int // UDP payload size; 0: the PDU's own size
	entities int
	site     uint16
	app      uint16
	cum      []float64 // cumulative mix
	types    []dis.PDUType
	rng      *rand.Rand

	es        dis.EntityStatePDU
	fire      dis.FirePDU
	det       dis.DetonationPDU
	col       dis.CollisionPDU
	others    map[dis.PDUType]dis.PDU
	codec     syntax.Codec // nil: raw, MarshalTo
	lastES    []time.Time
	next      int // message counter
	stride    int // group of message i = i*stride mod groups (coprime: every group, evenly spread in time)
	SentGroup []uint64
	SentType  map[dis.PDUType]uint64
	Heartbeat uint64 // Entity State PDUs sent because an entity's heartbeat was due
	// Encode times each PDU's encoding (raw: MarshalTo) when Clock is set.
	Encode measure.Hist
	Clock  func() time.Time
	noBeat bool
}

// GenConfig configures a Generator.
type GenConfig struct {
	Plan     Plan
	Entities int
	Size     int // requested UDP payload bytes (0: natural PDU size)
	Mix      Mix
	Site     uint16
	App      uint16
	Seed     int64
	// Syntax is the transfer syntax PDUs are sent in (agents/syntax; ""
	// or "raw": the native encoding). Size must be 0 with any other.
	Syntax string
	// NoHeartbeat sends only the mix's types: no Entity State PDU when an
	// entity's 5 s heartbeat is due (one type per stream, for measuring it).
	NoHeartbeat bool
	// Articulations is the number of articulation parameters every Entity
	// State PDU carries (0..dis.MaxRecords; each adds four integers and an
	// 8-octet value). With Size, the larger of the two counts holds.
	Articulations int
}

// NewGenerator validates c and returns a generator.
func NewGenerator(c GenConfig) (*Generator, error) {
	if c.Syntax != "" && c.Syntax != "raw" && c.Size != 0 {
		return nil, fmt.Errorf("size %d: a transfer syntax other than raw sends PDUs at their encoded size (size 0)", c.Size)
	}
	if err := c.Plan.Validate(); err != nil {
		return nil, err
	}
	if c.Entities < 1 || c.Entities > 65535 {
		return nil, fmt.Errorf("entities must be 1..65535, not %d", c.Entities)
	}
	if c.Size != 0 && (c.Size < MinSize || c.Size > MaxSize) {
		return nil, fmt.Errorf("size %d B: must be %d..%d bytes (message address + the smallest PDU .. the DIS maximum)",
			c.Size, MinSize, MaxSize)
	}
	if c.Articulations < 0 || c.Articulations > dis.MaxRecords {
		return nil, fmt.Errorf("articulations must be 0..%d, not %d", dis.MaxRecords, c.Articulations)
	}
	if len(c.Mix) == 0 {
		c.Mix = DefaultMix()
	}
	g := &Generator{plan: c.Plan, size: c.Size, entities: c.Entities, site: c.Site, app: c.App,
		rng: rand.New(rand.NewSource(c.Seed)), lastES: make([]time.Time, c.Entities),
		SentGroup: make([]uint64, c.Plan.Groups), SentType: map[dis.PDUType]uint64{}, others: map[dis.PDUType]dis.PDU{},
		noBeat: c.NoHeartbeat}
	g.stride = Stride(c.Plan.Groups)
	var err error
	if g.codec, err = newCodec(c.Syntax); err != nil {
		return nil, err
	}
	for t := range c.Mix {
		g.types = append(g.types, t)
	}
	sort.Slice(g.types, func(i, j int) bool { return g.types[i] < g.types[j] })
	acc := 0.0
	for _, t := range g.types {
		acc += c.Mix[t]
		g.cum = append(g.cum, acc)
		g.SentType[t] = 0
	}
	g.SentType[dis.TypeEntityState] += 0
	g.es.Header = dis.NewHeader(dis.TypeEntityState, 1, 0)
	g.es.EntityType = dis.EntityType{Kind: 1, Domain: 1, Country: 225, Category: 1, Subcategory: 1}
	g.es.ForceID = 1
	g.es.Marking = dis.NewMarking("PROTOLAB")
	g.es.DeadReckoning.Algorithm = 2
	k := c.Articulations
	if c.Size >= dis.MessageAddressSize+dis.EntityStateSize {
		k = max(k, min(dis.MaxRecords, (c.Size-dis.MessageAddressSize-dis.EntityStateSize)/dis.ArticulationParameterSize))
	}
	if k > 0 {
		g.es.ArticulationParameters = make([]dis.ArticulationParameter, k)
		for i := range g.es.ArticulationParameters {
			g.es.ArticulationParameters[i] = dis.ArticulationParameter{TypeDesignator: 0, PartAttachedTo: uint16(i), ParameterType: 4096}
		}
	}
	g.fire.Header = dis.NewHeader(dis.TypeFire, 1, 0)
	g.fire.Burst = dis.BurstDescriptor{Munition: dis.EntityType{Kind: 2, Domain: 2, Country: 225, Category: 2}, Quantity: 1, Rate: 1}
	g.det.Header = dis.NewHeader(dis.TypeDetonation, 1, 0)
	g.det.DetonationResult = 1
	g.col.Header = dis.NewHeader(dis.TypeCollision, 1, 0)
	for _, t := range g.types {
		switch t {
		case dis.TypeEntityState, dis.TypeFire, dis.TypeDetonation, dis.TypeCollision:
		default:
			p := dis.New(t)
			if p == nil {
				return nil, fmt.Errorf("mix: PDU type %d is not implemented", t)
			}
			*syntax.HeaderOf(p) = dis.NewHeader(t, 1, 0) // version 6, exercise 1, the type's family
			g.others[t] = p
		}
	}
	return g, nil
}

// Stride returns the step through n groups: coprime with n and near 0.618 n,
// so that any block of groups 0..K-1 is visited evenly over time.
func Stride(n int) int {
	k := int(0.618*float64(n) + 0.5)
	if k < 1 {
		k = 1
	}
	for gcd(k, n) != 1 {
		k++
	}
	return k
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// pick draws a PDU type from the mix.
func (g *Generator) pick() dis.PDUType {
	if len(g.types) == 1 {
		return g.types[0]
	}
	u := g.rng.Float64()
	for i, c := range g.cum {
		if u < c {
			return g.types[i]
		}
	}
	return g.types[len(g.types)-1]
}

// Next writes the next message into buf (len(buf) >= MaxSize) stamped with
// now, and returns its length and group index.
func (g *Generator) Next(buf []byte, now time.Time) (n, group int, err error) {
	i := g.next
	g.next++
	e := i % g.entities
	group = int(uint64(i%g.plan.Groups) * uint64(g.stride) % uint64(g.plan.Groups))
	ts := dis.NewTimestamp(time.Duration(now.UnixNano())%time.Hour, true)
	id := dis.EntityID{Site: g.site, Application: g.app, Entity: uint16(e + 1)}
	t := g.pick()
	small := g.size != 0 && g.size < dis.MessageAddressSize+dis.EntityStateSize
	if small {
		t = dis.TypeCollision // the only PDU below 62..145 bytes we pad up from
	} else if t != dis.TypeEntityState && !g.noBeat && now.Sub(g.lastES[e]) >= HeartbeatInterval {
		t = dis.TypeEntityState
		g.Heartbeat++
	}
	var p dis.PDU
	switch t {
	case dis.TypeEntityState:
		g.es.Header.Timestamp = ts
		g.es.EntityID = id
		g.es.Location = dis.Vector3Double{X: float64(i), Y: float64(e), Z: 100}
		g.es.LinearVelocity = dis.Vector3Float{X: 10, Y: float32(e % 7), Z: 0}
		g.lastES[e] = now
		p = &g.es
	case dis.TypeFire:
		g.fire.Header.Timestamp = ts
		g.fire.FiringEntityID = id
		g.fire.EventID = dis.EventID{Site: g.site, Application: g.app, EventNumber: uint16(i)}
		p = &g.fire
	case dis.TypeDetonation:
		g.det.Header.Timestamp = ts
		g.det.FiringEntityID = id
		g.det.EventID = dis.EventID{Site: g.site, Application: g.app, EventNumber: uint16(i)}
		p = &g.det
	case dis.TypeCollision:
		g.col.Header.Timestamp = ts
		g.col.IssuingEntityID = id
		g.col.EventID = dis.EventID{Site: g.site, Application: g.app, EventNumber: uint16(i)}
		p = &g.col
	default:
		p = g.others[t]
		setTimestamp(p, ts)
	}
	a := g.plan.MessageAddress(group, e)
	buf[0], buf[1] = byte(a>>8), byte(a)
	var m int
	var t0 time.Time
	if g.Clock != nil {
		t0 = g.Clock()
	}
	if g.codec != nil {
		out, err := g.codec.Append(buf[dis.MessageAddressSize:dis.MessageAddressSize], p)
		if err != nil {
			return 0, 0, err
		}
		if m = len(out); dis.MessageAddressSize+m > len(buf) {
			return 0, 0, fmt.Errorf("%s encoding of a %v PDU is %d bytes, more than a datagram here", g.codec.Name(), t, m)
		}
		copy(buf[dis.MessageAddressSize:], out) // a no-op unless Append had to grow
	} else if m, err = p.MarshalTo(buf[dis.MessageAddressSize:]); err != nil {
		return 0, 0, err
	}
	if g.Clock != nil {
		g.Encode.Add(g.Clock().Sub(t0).Seconds())
	}
	n = dis.MessageAddressSize + m
	if g.size > n {
		clear(buf[n:g.size])
		n = g.size
	}
	g.SentGroup[group]++
	g.SentType[t]++
	return n, group, nil
}

func setTimestamp(p dis.PDU, ts uint32) {
	switch p := p.(type) {
	case *dis.ServiceRequestPDU:
		p.Header.Timestamp = ts
	case *dis.ResupplyOfferPDU:
		p.Header.Timestamp = ts
	case *dis.ResupplyReceivedPDU:
		p.Header.Timestamp = ts
	case *dis.ResupplyCancelPDU:
		p.Header.Timestamp = ts
	case *dis.RepairCompletePDU:
		p.Header.Timestamp = ts
	case *dis.RepairResponsePDU:
		p.Header.Timestamp = ts
	}
}

// newCodec returns nil for raw (the native path stays as it was) or the
// named codec for exercise 1 (NewHeader's exercise in the generator).
func newCodec(name string) (syntax.Codec, error) {
	if name == "" || name == "raw" {
		return nil, nil
	}
	return syntax.New(name, syntax.Options{Exercise: 1})
}

// Syntax names the transfer syntax the generator encodes in.
func (g *Generator) Syntax() string {
	if g.codec == nil {
		return "raw"
	}
	return g.codec.Name()
}
