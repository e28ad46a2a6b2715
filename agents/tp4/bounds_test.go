package tp4

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A peer that never ends its TSDU: the receiver reassembles up to
// MaxTSDU octets, then gives the connection up with a DR instead of
// keeping every octet it is sent.
func TestReceiverBoundsTheTSDU(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxTSDU = 2048
	_, r := pair(t, DefaultConfig(), cfg)
	var got [][]byte
	r.OnTSDU = func(b []byte, _ time.Time) { got = append(got, b) }
	dt := func(seq uint32, n int, eot bool) {
		r.Input(Encode(TPDU{Type: DT, DstRef: r.localRef, Seq: seq, EOT: eot, Data: bytes.Repeat([]byte{byte(seq)}, n)}), t0)
	}
	// at the bound: delivered
	dt(0, 1000, false)
	dt(1, 1000, false)
	dt(2, 48, true)
	if len(got) != 1 || len(got[0]) != 2048 || !r.Open() {
		t.Fatalf("a TSDU of 2048 octets (the bound): delivered %d, open %v", len(got), r.Open())
	}
	drain(t, r, t0)
	// past it: the third DT without an end makes 3000 octets
	dt(3, 1000, false)
	dt(4, 1000, false)
	dt(5, 1000, false)
	if r.Open() || r.Err() == nil || !strings.Contains(r.Err().Error(), "a TSDU of more than 2048 octets (3000 without its end)") {
		t.Fatalf("after 3000 octets without an end: open %v, err %v", r.Open(), r.Err())
	}
	if len(r.partial) != 0 || r.Stats(t0).Dropped["tsdu_too_large"] != 1 {
		t.Fatalf("kept %d octets, dropped %v", len(r.partial), r.Stats(t0).Dropped)
	}
	out := drain(t, r, t0)
	if len(out) == 0 || out[len(out)-1].Type != DR {
		t.Fatalf("the receiver sent %q, want a DR last", types(out))
	}
	// nothing more is taken
	dt(6, 1000, false)
	if len(r.partial) != 0 || len(got) != 1 {
		t.Fatalf("after the DR: kept %d octets, %d TSDUs", len(r.partial), len(got))
	}
}

func TestMaxTSDUValidated(t *testing.T) {
	for _, n := range []int{-1, MaxTSDUSize + 1} {
		c := DefaultConfig()
		c.MaxTSDU = n
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "max TSDU") {
			t.Errorf("MaxTSDU %d: %v, want an error naming max TSDU", n, err)
		}
	}
}

// FuzzReceiver feeds the receiver arbitrary datagrams (each a 2-byte
// length and its bytes; small TPDUs and bounds keep the inputs short): it must not panic, must send only TPDUs it can
// decode, and must hold at most MaxTSDU octets of a TSDU being
// reassembled and RecvBuffer octets of DTs after a gap.
func FuzzReceiver(f *testing.F) {
	cfg := DefaultConfig()
	cfg.Ref, cfg.MaxTSDU, cfg.RecvBuffer = 0x1234, 256, 128
	const peer = 0x0777
	frame := func(ps ...TPDU) []byte {
		var out []byte
		for _, p := range ps {
			b := Encode(p)
			out = append(out, byte(len(b)>>8), byte(len(b)))
			out = append(out, b...)
		}
		return out
	}
	cr := TPDU{Type: CR, SrcRef: peer, Class: ClassOption, SizeLog: SizeLog(128), Options: OptSelective | OptExpedited}
	dt := func(seq uint32, n int, eot bool) TPDU {
		return TPDU{Type: DT, DstRef: cfg.Ref, Seq: seq, EOT: eot, Data: bytes.Repeat([]byte{byte(seq)}, n)}
	}
	f.Add(frame(cr, dt(0, 100, false), dt(1, 100, true), TPDU{Type: DR, DstRef: cfg.Ref, SrcRef: peer}))
	f.Add(frame(cr, dt(0, 100, false), dt(1, 100, false), dt(2, 100, false)))
	f.Add(frame(cr, dt(2, 60, false), dt(3, 60, false), dt(1, 100, false), dt(0, 100, true)))
	f.Add(frame(cr, TPDU{Type: ED, DstRef: cfg.Ref, Seq: 0, EOT: true, Data: []byte("expedited")}, dt(0, 12, true)))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := NewReceiver(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r.OnTSDU = func(b []byte, _ time.Time) {
			if len(b) > cfg.MaxTSDU {
				t.Fatalf("delivered a TSDU of %d octets, bound %d", len(b), cfg.MaxTSDU)
			}
		}
		now := t0
		for len(in) >= 2 {
			n := int(in[0])<<8 | int(in[1])
			in = in[2:]
			if n > len(in) {
				n = len(in)
			}
			r.Input(in[:n], now)
			in = in[n:]
			now = now.Add(time.Millisecond)
			held := 0
			for _, h := range r.ooo {
				held += len(h.data)
			}
			if len(r.partial) > cfg.MaxTSDU || held > cfg.RecvBuffer {
				t.Fatalf("holds %d octets of a TSDU (bound %d) and %d after a gap (bound %d)", len(r.partial), cfg.MaxTSDU, held, cfg.RecvBuffer)
			}
			for b := r.Output(now); b != nil; b = r.Output(now) {
				if _, err := Decode(b); err != nil {
					t.Fatalf("the receiver sent % x: %v", b, err)
				}
			}
		}
	})
}
