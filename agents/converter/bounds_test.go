package converter

import (
	"sync"
	"testing"
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
