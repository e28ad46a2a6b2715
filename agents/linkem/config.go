package linkem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Limits of the configuration.
const (
	// DefaultLimit is the held-packet limit when none is given (netem's
	// default limit).
	DefaultLimit = 1000
	// MaxLimit is the largest accepted --limit. The kernel queue is sized
	// for it (see KernelQueueMaxLen).
	MaxLimit = 100000
	// MaxHold is the safety bound on how long any packet may be held:
	// configurations whose largest possible delay exceeds it are rejected,
	// and the scheduler clamps every release time to arrival+MaxHold.
	MaxHold = 60 * time.Second
)

// Config is one direction's impairment configuration. Its JSON form uses
// exactly the flag names of protolab-linkem and the same value syntax
// (see the package documentation): PUT /config takes it, GET /config
// returns it. Fields left out of a PUT take their defaults (no impairment,
// limit 1000): a PUT replaces the whole configuration.
type Config struct {
	Delay        Duration `json:"delay"`
	Jitter       Duration `json:"jitter"`
	Distribution string   `json:"distribution"`
	KeepOrder    bool     `json:"keep-order"`
	Loss         Percent  `json:"loss"`
	LossGE       GEModel  `json:"loss-ge"`
	Reorder      Percent  `json:"reorder"`
	Corrupt      Percent  `json:"corrupt"`
	BER          BER      `json:"ber"`
	Duplicate    Percent  `json:"duplicate"`
	Limit        int      `json:"limit"`
}

// Distribution names, with netem's meanings (see the package doc).
const (
	DistUniform      = "uniform"
	DistNormal       = "normal"
	DistPareto       = "pareto"
	DistParetoNormal = "paretonormal"
)

// Distributions lists the accepted --distribution values.
var Distributions = []string{DistUniform, DistNormal, DistPareto, DistParetoNormal}

// Normalize fills defaults in: distribution "uniform" and limit
// DefaultLimit when empty or zero.
func (c Config) Normalize() Config {
	if c.Distribution == "" {
		c.Distribution = DistUniform
	}
	if c.Limit == 0 {
		c.Limit = DefaultLimit
	}
	return c
}

// Validate checks a (normalized or not) configuration and returns every
// problem found, joined, each naming its field.
func (c Config) Validate() error {
	c = c.Normalize()
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Delay < 0 {
		bad("delay", "must not be negative, got %s", time.Duration(c.Delay))
	}
	if c.Jitter < 0 {
		bad("jitter", "must not be negative, got %s", time.Duration(c.Jitter))
	}
	if _, ok := distMaxT[c.Distribution]; !ok {
		bad("distribution", "unknown distribution %q (want one of %s)", c.Distribution, strings.Join(Distributions, ", "))
	} else if c.Delay >= 0 && c.Jitter >= 0 {
		worst := time.Duration(c.Delay) + time.Duration(float64(c.Jitter)*distMaxT[c.Distribution])
		if worst > MaxHold || c.Delay > Duration(MaxHold) || c.Jitter > Duration(MaxHold) {
			bad("delay", "delay %s with jitter %s (%s) can hold a packet up to %s, more than the %s safety limit",
				time.Duration(c.Delay), time.Duration(c.Jitter), c.Distribution, worst, MaxHold)
		}
	}
	for _, p := range []struct {
		name string
		v    Percent
	}{{"loss", c.Loss}, {"reorder", c.Reorder}, {"corrupt", c.Corrupt}, {"duplicate", c.Duplicate}} {
		if err := p.v.check(); err != nil {
			bad(p.name, "%v", err)
		}
	}
	if c.LossGE.Enabled {
		if err := c.LossGE.check(); err != nil {
			bad("loss-ge", "%v", err)
		}
		if c.Loss != 0 {
			bad("loss-ge", "cannot be combined with loss (%s): choose random loss or the Gilbert-Elliott model", c.Loss)
		}
	}
	if err := c.BER.check(); err != nil {
		bad("ber", "%v", err)
	}
	if c.BER != 0 && c.Corrupt != 0 {
		bad("ber", "cannot be combined with corrupt (%s): choose a per-packet or a per-bit corruption rate", c.Corrupt)
	}
	if c.Reorder != 0 && c.Delay <= 0 {
		bad("reorder", "needs a delay: reordered packets are the ones sent without the delay (as in netem)")
	}
	if c.Limit < 1 || c.Limit > MaxLimit {
		bad("limit", "must be between 1 and %d packets, got %d", MaxLimit, c.Limit)
	}
	return errors.Join(errs...)
}

// needsPayload tells whether packets must be copied to userspace whole:
// corruption rewrites them and duplication re-sends them.
func (c Config) needsPayload() bool {
	return c.Corrupt != 0 || c.BER != 0 || c.Duplicate != 0
}

// DecodeConfig parses a JSON configuration strictly (unknown fields and
// trailing data are errors, and every error names its field), normalizes
// and validates it.
func DecodeConfig(data []byte) (Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return Config{}, fmt.Errorf("invalid config JSON: %w", err)
	}
	if raw == nil {
		return Config{}, errors.New("invalid config JSON: want an object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Config{}, errors.New("invalid config JSON: trailing data after the object")
	}
	var c Config
	fields := map[string]any{
		"delay": &c.Delay, "jitter": &c.Jitter, "distribution": &c.Distribution,
		"keep-order": &c.KeepOrder, "loss": &c.Loss, "loss-ge": &c.LossGE,
		"reorder": &c.Reorder, "corrupt": &c.Corrupt, "ber": &c.BER,
		"duplicate": &c.Duplicate, "limit": &c.Limit,
	}
	var errs []error
	for name, v := range raw {
		dst, ok := fields[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: unknown field (known: %s)", name, strings.Join(ConfigFields, ", ")))
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				err = fmt.Errorf("wrong type: got JSON %s", te.Value)
			}
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return Config{}, errors.Join(errs...)
	}
	c = c.Normalize()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ConfigFields are the JSON field names of Config, which are also the
// flag names of protolab-linkem.
var ConfigFields = []string{"delay", "jitter", "distribution", "keep-order", "loss", "loss-ge",
	"reorder", "corrupt", "ber", "duplicate", "limit"}

// Duration is a time.Duration written with a unit ("10ms", "1.5s",
// "250us"); "0" is the only unitless value accepted. In JSON it is a
// string.
type Duration time.Duration

// ParseDuration parses a duration flag or JSON value.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("duration %q has no unit: write e.g. %sms or %sus", s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a number with a unit (ns, us, ms, s), e.g. 10ms", s)
	}
	return Duration(d), nil
}

func (d Duration) String() string { return time.Duration(d).String() }

// Set implements flag.Value.
func (d *Duration) Set(s string) error {
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON writes the duration as a string such as "20ms".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts a string with a unit; a bare JSON number is only
// accepted when it is 0.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var f float64
		if json.Unmarshal(b, &f) == nil {
			if f == 0 {
				*d = 0
				return nil
			}
			return fmt.Errorf("duration %s has no unit: write it as a string, e.g. \"%sms\"", b, b)
		}
		return fmt.Errorf("duration must be a string such as \"10ms\", got %s", b)
	}
	return d.Set(s)
}

// Percent is a percentage, 0..100. It is written as a number, optionally
// followed by "%": "1.5" and "1.5%" both mean 1.5 percent (never a
// fraction: "0.5" is half a percent). In JSON it may be a number or such a
// string, and is written back as a string like "1.5%".
type Percent float64

// ParsePercent parses a percentage flag or JSON value.
func ParsePercent(s string) (Percent, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(t, "%")
	t = strings.TrimSpace(t)
	if t == "" {
		return 0, fmt.Errorf("invalid percentage %q: want a number from 0 to 100, e.g. 1.5 or 1.5%%", s)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid percentage %q: want a number from 0 to 100, e.g. 1.5 or 1.5%%", s)
	}
	p := Percent(f)
	if err := p.check(); err != nil {
		return 0, err
	}
	return p, nil
}

func (p Percent) check() error {
	f := float64(p)
	if math.IsNaN(f) || f < 0 || f > 100 {
		return fmt.Errorf("percentage %s is out of range: it must be between 0 and 100 (percent, not a fraction)", strconv.FormatFloat(f, 'g', -1, 64))
	}
	return nil
}

// Prob is the percentage as a probability in [0, 1].
func (p Percent) Prob() float64 { return float64(p) / 100 }

func (p Percent) String() string { return strconv.FormatFloat(float64(p), 'g', -1, 64) + "%" }

// Set implements flag.Value.
func (p *Percent) Set(s string) error {
	v, err := ParsePercent(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// MarshalJSON writes the percentage as a string such as "1.5%".
func (p Percent) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// UnmarshalJSON accepts a JSON number (percent) or a string as in flags.
func (p *Percent) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err == nil {
		v := Percent(f)
		if err := v.check(); err != nil {
			return err
		}
		*p = v
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("percentage must be a number or a string such as \"1.5%%\", got %s", b)
	}
	return p.Set(s)
}

// BER is a bit error rate: the probability, from 0 to 1 exclusive, that any
// one bit is flipped (e.g. "1e-6"). A packet of L bytes is corrupted with
// probability 1-(1-BER)^(8L).
type BER float64

// ParseBER parses a bit error rate.
func ParseBER(s string) (BER, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("invalid bit error rate %q: want a probability per bit such as 1e-6", s)
	}
	b := BER(f)
	if err := b.check(); err != nil {
		return 0, err
	}
	return b, nil
}

func (b BER) check() error {
	f := float64(b)
	if math.IsNaN(f) || f < 0 || f >= 1 {
		return fmt.Errorf("bit error rate %s is out of range: it is a probability per bit, 0 <= ber < 1 (e.g. 1e-6)", strconv.FormatFloat(f, 'g', -1, 64))
	}
	return nil
}

func (b BER) String() string { return strconv.FormatFloat(float64(b), 'g', -1, 64) }

// Set implements flag.Value.
func (b *BER) Set(s string) error {
	v, err := ParseBER(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalJSON writes the rate as a JSON number.
func (b BER) MarshalJSON() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalJSON accepts a JSON number or a numeric string.
func (b *BER) UnmarshalJSON(data []byte) error {
	var f float64
	if err := json.Unmarshal(data, &f); err == nil {
		v := BER(f)
		if err := v.check(); err != nil {
			return err
		}
		*b = v
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("ber must be a number such as 1e-6, got %s", data)
	}
	return b.Set(s)
}

// PacketProb is the probability that a packet of n bytes has at least one
// bit error: 1-(1-ber)^(8n), computed without cancellation.
func (b BER) PacketProb(n int) float64 {
	if b <= 0 || n <= 0 {
		return 0
	}
	return -math.Expm1(float64(8*n) * math.Log1p(-float64(b)))
}

// GEModel is the Gilbert-Elliott loss model with netem's parameters
// ("loss gemodel p r 1-h 1-k"), all percentages:
//
//   - P: per-packet probability of going from the good to the bad state;
//   - R: per-packet probability of going from the bad to the good state
//     (default 100-P, as iproute2);
//   - OneMinusH: loss probability in the bad state (default 100);
//   - OneMinusK: loss probability in the good state (default 0).
//
// Flag and JSON form: "p[,r[,1-h[,1-k]]]", e.g. "1%,30%" or "1,30,100,0";
// "" disables it.
type GEModel struct {
	Enabled   bool
	P         Percent
	R         Percent
	OneMinusH Percent
	OneMinusK Percent
}

// ParseGEModel parses "p[,r[,1-h[,1-k]]]".
func ParseGEModel(s string) (GEModel, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return GEModel{}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 4 {
		return GEModel{}, fmt.Errorf("invalid Gilbert-Elliott model %q: want p[,r[,1-h[,1-k]]] (percentages), at most 4 values", s)
	}
	var vals [4]Percent
	names := [4]string{"p", "r", "1-h", "1-k"}
	for i, part := range parts {
		v, err := ParsePercent(part)
		if err != nil {
			return GEModel{}, fmt.Errorf("Gilbert-Elliott %s: %w", names[i], err)
		}
		vals[i] = v
	}
	m := GEModel{Enabled: true, P: vals[0], R: 100 - vals[0], OneMinusH: 100, OneMinusK: 0}
	if len(parts) > 1 {
		m.R = vals[1]
	}
	if len(parts) > 2 {
		m.OneMinusH = vals[2]
	}
	if len(parts) > 3 {
		m.OneMinusK = vals[3]
	}
	if err := m.check(); err != nil {
		return GEModel{}, err
	}
	return m, nil
}

func (m GEModel) check() error {
	if !m.Enabled {
		return nil
	}
	for _, v := range []Percent{m.P, m.R, m.OneMinusH, m.OneMinusK} {
		if err := v.check(); err != nil {
			return err
		}
	}
	if m.P > 0 && m.R == 0 {
		return errors.New("r (bad-to-good probability) is 0 with p > 0: the model would stay in the bad state forever")
	}
	return nil
}

// StationaryLoss is the model's long-run loss rate (a probability):
// pi_good*(1-k) + pi_bad*(1-h), with pi_bad = p/(p+r).
func (m GEModel) StationaryLoss() float64 {
	if !m.Enabled {
		return 0
	}
	p, r := m.P.Prob(), m.R.Prob()
	if p == 0 {
		return m.OneMinusK.Prob()
	}
	piBad := p / (p + r)
	return (1-piBad)*m.OneMinusK.Prob() + piBad*m.OneMinusH.Prob()
}

func (m GEModel) String() string {
	if !m.Enabled {
		return ""
	}
	return strings.Join([]string{m.P.String(), m.R.String(), m.OneMinusH.String(), m.OneMinusK.String()}, ",")
}

// Set implements flag.Value.
func (m *GEModel) Set(s string) error {
	v, err := ParseGEModel(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// MarshalJSON writes the model as its flag string with every value filled
// in ("" when disabled).
func (m GEModel) MarshalJSON() ([]byte, error) { return json.Marshal(m.String()) }

// UnmarshalJSON accepts the flag string form.
func (m *GEModel) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("loss-ge must be a string such as \"1%%,30%%,100%%,0%%\", got %s", b)
	}
	return m.Set(s)
}
