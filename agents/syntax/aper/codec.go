package aper

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	fa "github.com/free5gc/aper"
	"github.com/free5gc/aper/logger"
	"github.com/sirupsen/logrus"

	"protolab/agents/dis"
	"protolab/agents/syntax"
)

func init() {
	// free5gc/aper logs some decode failures itself (logrus, to stderr); here
	// every failure is returned and counted as a drop instead.
	logger.GetLogger().SetLevel(logrus.PanicLevel)
	syntax.Register("per", "ASN.1 aligned PER (free5gc/aper; REAL contents per X.690 8.5)", newCodec)
}

// kind is what a struct field of types.go holds.
type kind int

const (
	kInt    kind = iota // INTEGER (a UInt*): one stream value
	kReal               // REAL: one stream value (float64 bits) <-> contents octets
	kOctets             // fixed-size OCTET STRING: a length value, the octets in Stream.B
	kSeq                // SEQUENCE: its fields in order
	kSeqOf              // SEQUENCE OF: a count value, then each element
)

// node is one field's step of the plan that moves a syntax.Stream into the
// structs and back: built once per type from the struct tags.
type node struct {
	kind   kind
	field  int    // index in the parent struct
	size   int    // kOctets: the fixed size
	fields []node // kSeq
	elem   *node  // kSeqOf: the element (a kSeq)
	typ    reflect.Type
}

func plan(t reflect.Type, field int, tag string) node {
	n := node{field: field, typ: t}
	switch {
	case t == reflect.TypeOf(fa.OctetString{}) && hasPart(tag, "real"):
		n.kind = kReal
	case t == reflect.TypeOf(fa.OctetString{}):
		n.kind = kOctets
		size, err := strconv.Atoi(part(tag, "sizeUB:"))
		if err != nil || part(tag, "sizeLB:") != part(tag, "sizeUB:") {
			panic(fmt.Sprintf("aper: OCTET STRING field %d needs a fixed size (tag %q)", field, tag))
		}
		n.size = size
	case t.Kind() == reflect.Int64:
		n.kind = kInt
	case t.Kind() == reflect.Slice:
		n.kind = kSeqOf
		e := plan(t.Elem(), 0, "")
		n.elem = &e
	case t.Kind() == reflect.Struct:
		n.kind = kSeq
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			n.fields = append(n.fields, plan(f.Type, i, f.Tag.Get("aper")))
		}
	default:
		panic("aper: no plan for " + t.String())
	}
	return n
}

func hasPart(tag, p string) bool {
	for _, x := range strings.Split(tag, ",") {
		if x == p {
			return true
		}
	}
	return false
}

func part(tag, prefix string) string {
	for _, x := range strings.Split(tag, ",") {
		if v, ok := strings.CutPrefix(x, prefix); ok {
			return v
		}
	}
	return ""
}

// alternatives[t] is the plan of DISPDU alternative t (its field index in
// disPDU is t: Present counts from 1 as the PDU types do).
var alternatives = func() (a [dis.TypeRepairResponse + 1]node) {
	t := reflect.TypeOf(disPDU{})
	for _, pt := range dis.Types {
		f := t.Field(int(pt))
		a[pt] = plan(f.Type.Elem(), int(pt), "")
	}
	return a
}()

type codec struct {
	s     syntax.Stream
	enc   disPDU
	dec   disPDU
	reals []byte // REAL contents of the PDU being encoded (the structs' OctetStrings point into it)
	out   []byte // decode: the re-encoding that says how many octets the PDU took
	pdus  syntax.PDUs
	iv    int
	ib    int
}

func newCodec(syntax.Options) (syntax.Codec, error) {
	c := &codec{}
	for _, t := range dis.Types {
		reflect.ValueOf(&c.enc).Elem().Field(int(t)).Set(reflect.New(alternatives[t].typ))
	}
	return c, nil
}

func (c *codec) Name() string        { return "per" }
func (c *codec) Stats() syntax.Stats { return syntax.Stats{} }

func (c *codec) Append(dst []byte, p dis.PDU) ([]byte, error) {
	if n := p.Len(); n > dis.MaxPDUSize {
		return dst, fmt.Errorf("per encode: %v PDU of %d bytes exceeds %d", p.Type(), n, dis.MaxPDUSize)
	}
	t := p.Type()
	if !t.Known() {
		return dst, fmt.Errorf("per encode: PDU type %d is not in the module", t)
	}
	c.s.ResetEncode()
	c.s.Alt(t)
	syntax.Walk(&c.s, p)
	c.iv, c.ib, c.reals = 1, 0, c.reals[:0]
	c.enc.Present = int(t)
	alt := reflect.ValueOf(&c.enc).Elem().Field(int(t)).Elem()
	c.fill(alt, &alternatives[t])
	b, err := fa.MarshalWithParams(c.enc, choiceUB)
	if err != nil {
		return dst, fmt.Errorf("per encode: %v PDU: %w", t, err)
	}
	return append(dst, b...), nil
}

// fill moves stream values into v following n (encoding).
func (c *codec) fill(v reflect.Value, n *node) {
	switch n.kind {
	case kInt:
		v.SetInt(int64(c.s.V[c.iv]))
		c.iv++
	case kReal:
		start := len(c.reals)
		c.reals = syntax.AppendRealContents(c.reals, math.Float64frombits(c.s.V[c.iv]))
		v.SetBytes(c.reals[start:len(c.reals):len(c.reals)])
		c.iv++
	case kOctets:
		k := int(c.s.V[c.iv])
		v.SetBytes(c.s.B[c.ib : c.ib+k : c.ib+k])
		c.iv, c.ib = c.iv+1, c.ib+k
	case kSeqOf:
		k := int(c.s.V[c.iv])
		c.iv++
		if v.Cap() >= k {
			v.SetLen(k)
		} else {
			v.Set(reflect.MakeSlice(v.Type(), k, k))
		}
		for i := 0; i < k; i++ {
			c.fill(v.Index(i), n.elem)
		}
	case kSeq:
		for i := range n.fields {
			c.fill(v.Field(n.fields[i].field), &n.fields[i])
		}
	}
}

func (c *codec) Decode(b []byte) (p dis.PDU, err error) {
	if len(b) == 0 {
		return nil, &syntax.DecodeError{Syntax: "per", Reason: syntax.ReasonTruncated, Err: fmt.Errorf("empty input")}
	}
	if len(b) > 4*dis.MaxPDUSize {
		return nil, &syntax.DecodeError{Syntax: "per", Reason: syntax.ReasonTooLarge,
			Err: fmt.Errorf("%d bytes, at most %d accepted", len(b), 4*dis.MaxPDUSize)}
	}
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, &syntax.DecodeError{Syntax: "per", Reason: syntax.ReasonMalformed, Err: fmt.Errorf("free5gc/aper panicked: %v", r)}
		}
	}()
	c.dec = disPDU{}
	if err := fa.UnmarshalWithParams(b, &c.dec, choiceUB); err != nil {
		return nil, &syntax.DecodeError{Syntax: "per", Reason: reason(err), Err: err}
	}
	t := dis.PDUType(c.dec.Present)
	if !t.Known() {
		return nil, &syntax.DecodeError{Syntax: "per", Reason: syntax.ReasonUnknownTag, Err: fmt.Errorf("CHOICE index %d", c.dec.Present-1)}
	}
	out, err := fa.MarshalWithParams(c.dec, choiceUB)
	if err != nil {
		return nil, &syntax.DecodeError{Syntax: "per", Reason: syntax.ReasonConstraint, Err: err}
	}
	if len(out) < len(b) {
		return nil, &syntax.DecodeError{Syntax: "per", Reason: syntax.ReasonTrailing,
			Err: fmt.Errorf("the PDU takes %d of %d octets", len(out), len(b))}
	}
	c.s.ResetEncode()
	c.s.V = append(c.s.V, uint64(t))
	alt := reflect.ValueOf(&c.dec).Elem().Field(int(t)).Elem()
	if err := c.extract(alt, &alternatives[t]); err != nil {
		return nil, &syntax.DecodeError{Syntax: "per", Reason: syntax.ReasonMalformed, Err: err}
	}
	c.s.ResetDecode(c.s.V, c.s.B)
	return syntax.DecodeStream("per", &c.s, &c.pdus)
}

// extract appends v's values to the stream following n (decoding).
func (c *codec) extract(v reflect.Value, n *node) error {
	switch n.kind {
	case kInt:
		c.s.V = append(c.s.V, uint64(v.Int()))
	case kReal:
		f, err := syntax.ParseReal(v.Bytes())
		if err != nil {
			return err
		}
		c.s.V = append(c.s.V, math.Float64bits(f))
	case kOctets:
		c.s.V = append(c.s.V, uint64(v.Len()))
		c.s.B = append(c.s.B, v.Bytes()...)
	case kSeqOf:
		if v.Len() > dis.MaxRecords {
			return fmt.Errorf("%d records, at most %d", v.Len(), dis.MaxRecords)
		}
		c.s.V = append(c.s.V, uint64(v.Len()))
		for i := 0; i < v.Len(); i++ {
			if err := c.extract(v.Index(i), n.elem); err != nil {
				return err
			}
		}
	case kSeq:
		for i := range n.fields {
			if err := c.extract(v.Field(n.fields[i].field), &n.fields[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// reason names a free5gc/aper error as a drop reason.
func reason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "overflow"), strings.Contains(msg, "truncated"), strings.Contains(msg, "out of range"):
		return syntax.ReasonTruncated
	case strings.Contains(msg, "CHOICE"), strings.Contains(msg, "Present"):
		return syntax.ReasonUnknownTag
	}
	return syntax.ReasonMalformed
}
