package syntax

import (
	"errors"

	"protolab/agents/dis"
)

func init() {
	Register("raw", "the native DIS encoding (no transfer syntax; agents/dis)", func(Options) (Codec, error) { return &rawCodec{}, nil })
}

type rawCodec struct{ d dis.Decoder }

func (c *rawCodec) Name() string { return "raw" }
func (c *rawCodec) Stats() Stats { return Stats{} }

func (c *rawCodec) Append(dst []byte, p dis.PDU) ([]byte, error) { return dis.AppendMarshal(dst, p) }

func (c *rawCodec) Decode(b []byte) (dis.PDU, error) {
	p, err := c.d.Decode(b)
	if err != nil {
		r := ReasonNative
		if errors.Is(err, dis.ErrTooLarge) {
			r = ReasonTooLarge
		}
		return nil, &DecodeError{Syntax: "raw", Reason: r, Err: err}
	}
	return p, nil
}
