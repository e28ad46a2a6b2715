package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrame is the largest message a stream transport carries, 16 MiB. A
// length prefix above it is an error before anything is allocated, and the
// body buffer grows with the bytes that really arrive, so a lying prefix
// costs at most what the peer sent.
const MaxFrame = 16 << 20

// FrameHeader is the size of the length prefix: 4 bytes, big-endian.
const FrameHeader = 4

// ErrFrameTooLarge is returned for a length prefix above MaxFrame.
var ErrFrameTooLarge = errors.New("frame too large")

// growStep is the most the body buffer grows per read beyond what arrived.
const growStep = 64 << 10

// Decoder reads length-prefixed frames from a stream. A read error (a
// deadline) keeps the partial frame: the next Next goes on with it.
type Decoder struct {
	hdr  [FrameHeader]byte
	nh   int    // header bytes read
	body []byte // body so far (len = bytes read)
	want int    // body length, valid when nh == FrameHeader
}

// Next returns the next frame's body, in buf when it fits (buf is only
// used when no partial frame is pending). io.EOF means the stream ended
// on a frame boundary; io.ErrUnexpectedEOF inside a frame.
func (d *Decoder) Next(r io.Reader, buf []byte) ([]byte, error) {
	for d.nh < FrameHeader {
		n, err := r.Read(d.hdr[d.nh:])
		d.nh += n
		if d.nh == FrameHeader {
			break
		}
		if err != nil {
			if err == io.EOF && d.nh > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	if d.body == nil {
		want := binary.BigEndian.Uint32(d.hdr[:])
		if want > MaxFrame {
			d.nh = 0
			return nil, fmt.Errorf("%w: length prefix %d bytes, max %d", ErrFrameTooLarge, want, MaxFrame)
		}
		d.want = int(want)
		if cap(buf) >= d.want {
			d.body = buf[:0]
		} else {
			d.body = make([]byte, 0, min(d.want, growStep))
		}
	}
	for len(d.body) < d.want {
		if len(d.body) == cap(d.body) {
			nb := make([]byte, len(d.body), min(d.want, 2*cap(d.body)+growStep))
			copy(nb, d.body)
			d.body = nb
		}
		n, err := r.Read(d.body[len(d.body):min(d.want, cap(d.body))])
		d.body = d.body[:len(d.body)+n]
		if len(d.body) == d.want {
			break
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	out := d.body
	d.nh, d.body, d.want = 0, nil, 0
	return out, nil
}

// AppendFrame appends p with its length prefix to dst.
func AppendFrame(dst, p []byte) ([]byte, error) {
	if len(p) > MaxFrame {
		return dst, fmt.Errorf("%w: message of %d bytes, max %d", ErrFrameTooLarge, len(p), MaxFrame)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(p)))
	return append(dst, p...), nil
}
