package measure

import "time"

// Level is a time-weighted level (buffer octets): the current value, the
// maximum, and the integral since the first change, for a time average as
// the satellite seed's Table 1 defines buffer use. The zero value is
// ready; it is not safe for concurrent use.
type Level struct {
	Cur, Max    int
	start, last time.Time
	integral    float64 // level-seconds
}

// Add changes the level by d at now.
func (g *Level) Add(now time.Time, d int) {
	g.Advance(now)
	g.Cur += d
	g.Max = max(g.Max, g.Cur)
}

// Set makes the level v at now.
func (g *Level) Set(now time.Time, v int) { g.Add(now, v-g.Cur) }

// Advance accounts the current level up to now (the first call starts the
// clock).
func (g *Level) Advance(now time.Time) {
	if g.start.IsZero() {
		g.start, g.last = now, now
	}
	if now.After(g.last) {
		g.integral += float64(g.Cur) * now.Sub(g.last).Seconds()
		g.last = now
	}
}

// Started says whether the level has changed or been advanced yet.
func (g *Level) Started() bool { return !g.start.IsZero() }

// Integral is the level's integral (level-seconds) from the first change
// to now.
func (g *Level) Integral(now time.Time) float64 {
	in := g.integral
	if !g.start.IsZero() && now.After(g.last) {
		in += float64(g.Cur) * now.Sub(g.last).Seconds()
	}
	return in
}

// Span is the time from the first change to now (0 before it).
func (g *Level) Span(now time.Time) time.Duration {
	if g.start.IsZero() || !now.After(g.start) {
		return 0
	}
	return now.Sub(g.start)
}

// Avg is the time average from the first change to now.
func (g *Level) Avg(now time.Time) float64 {
	if g.start.IsZero() {
		return 0
	}
	if span := g.Span(now).Seconds(); span > 0 {
		return g.Integral(now) / span
	}
	return float64(g.Cur)
}
