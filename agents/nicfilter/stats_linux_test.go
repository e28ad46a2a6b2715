package nicfilter

import "testing"

func TestSameStateIgnoresJoinOrder(t *testing.T) {
	a := State{Mode: Hash64, Joined: [][6]byte{{1, 0, 0x5e, 0, 0, 1}, {1, 0, 0x5e, 0, 0, 2}}}
	b := State{Mode: Hash64, Joined: [][6]byte{{1, 0, 0x5e, 0, 0, 2}, {1, 0, 0x5e, 0, 0, 1}}}
	if !sameState(a, b) {
		t.Error("the same groups in another order differ")
	}
	b.Joined[0][5] = 3
	if sameState(a, b) {
		t.Error("other groups are the same")
	}
	b = a
	b.Promisc = true
	if sameState(a, b) {
		t.Error("promiscuous is the same as not")
	}
}
