package linkem

import (
	"math/rand/v2"
	"sort"
	"testing"
)

func TestHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var h pktHeap
	var want []heldPkt
	seq := uint64(0)
	for round := 0; round < 50; round++ {
		for i := 0; i < r.IntN(200); i++ {
			seq++
			p := heldPkt{release: int64(r.IntN(50)), seq: seq, id: uint32(seq)}
			h.push(p)
			want = append(want, p)
		}
		sort.Slice(want, func(i, j int) bool { return want[i].before(&want[j]) })
		for k := r.IntN(len(want) + 1); k > 0; k-- {
			got := h.pop()
			if got.id != want[0].id {
				t.Fatalf("popped id %d (release %d), want %d (release %d)", got.id, got.release, want[0].id, want[0].release)
			}
			want = want[1:]
		}
		if h.Len() != len(want) {
			t.Fatalf("heap holds %d, want %d", h.Len(), len(want))
		}
	}
}
