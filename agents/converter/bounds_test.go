package converter

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"protolab/agents/bundle"
)

// A host keeps acknowledgements of its own joins only: any number C_2
// (or anyone) sends used to become an entry of a map, so a stream of
// acknowledgements of distinct numbers grew it without end.
func TestHostKeepsOnlyAcksOfItsJoins(t *testing.T) {
	h := &hostSide{acked: make([]bool, 3+1)}
	h.cond = sync.NewCond(&h.mu)
	for _, tc := range []struct {
		seq  uint32
		kept bool
	}{{1, true}, {3, true}, {3, true}, {0, false}, {4, false}, {1 << 31, false}, {^uint32(0), false}} {
		if got := h.ack(tc.seq); got != tc.kept {
			t.Errorf("ack %d: kept %v, want %v", tc.seq, got, tc.kept)
		}
	}
	if len(h.acked) != 4 || !h.acked[1] || h.acked[2] || !h.acked[3] {
		t.Fatalf("acked %v, want joins 1 and 3 of 3", h.acked)
	}
}

// C_2 keeps one join per host and group waiting for a C_1: a host's
// resends, or a stream of joins with ever new numbers, used to append an
// entry each until a C_1 answered. The host gets one acknowledgement, of
// its latest number.
func TestCentralKeepsOneWaitingJoinPerHost(t *testing.T) {
	c, out, _ := central(t, 1, 10e6)
	now := time.Now()
	for seq := uint32(1); seq <= 1000; seq++ {
		c.From(controlBundle(bundle.Control{Type: bundle.CtlJoin, Host: 1, Group: 5, Seq: seq}), hostAddr(1), now)
	}
	c.From(controlBundle(bundle.Control{Type: bundle.CtlJoin, Host: 2, Group: 5, Seq: 1}), hostAddr(2), now)
	if got := c.waiting[5]; len(got) != 2 || got[0] != (ack{1, 1000}) || got[1] != (ack{2, 1}) {
		t.Fatalf("%d joins waiting (%v ... %v), want host 1's join 1000 and host 2's join 1", len(got), got[:min(2, len(got))], got[len(got)-1:])
	}
	if len(c.c1Joins) != 1 {
		t.Fatalf("%d joins sent to the C_1, want 1", len(c.c1Joins))
	}
	c.Tick(now)
	c.From(controlBundle(bundle.Control{Type: bundle.CtlAck, Seq: c.c1Seq}), c.cfg.C1s[0], now)
	*out = nil
	c.Tick(now)
	var acks []string
	for _, s := range *out {
		var r bundle.Reader
		if s.to.Port() != 4002 || r.Open(s.b) != nil {
			continue
		}
		for m, p, ok := r.NextMask(); ok; m, p, ok = r.NextMask() {
			if ctl, err := bundle.ParseControl(p); err == nil && ctl.Type == bundle.CtlAck {
				acks = append(acks, fmt.Sprintf("mask %d host %d seq %d", m, ctl.Host, ctl.Seq))
			}
		}
	}
	if got := strings.Join(acks, ", "); got != "mask 1 host 1 seq 1000, mask 2 host 2 seq 1" {
		t.Fatalf("acknowledgements: %s", got)
	}
	if len(c.waiting[5]) != 0 {
		t.Fatalf("waiting %v after the C_1 answered", c.waiting[5])
	}
}
