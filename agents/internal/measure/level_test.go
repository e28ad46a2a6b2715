package measure

import (
	"math"
	"testing"
	"time"
)

func TestLevelTimeAverage(t *testing.T) {
	var g Level
	t0 := time.Unix(1000, 0)
	if g.Avg(t0) != 0 || g.Started() {
		t.Fatal("a fresh level averages 0 and has not started")
	}
	g.Add(t0, 100)                  // 100 for 1 s
	g.Add(t0.Add(time.Second), 300) // 400 for 1 s
	g.Set(t0.Add(2*time.Second), 0) // 0 for 2 s
	avg := g.Avg(t0.Add(4 * time.Second))
	if math.Abs(avg-125) > 1e-9 { // (100 + 400) / 4
		t.Fatalf("avg %v, want 125", avg)
	}
	if g.Max != 400 || g.Cur != 0 {
		t.Fatalf("max %d cur %d, want 400 and 0", g.Max, g.Cur)
	}
}
