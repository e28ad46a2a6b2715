package converter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"protolab/agents/internal/cli"
	"protolab/agents/metrics"
)

// Roles are the converter's roles by their command-line names.
var Roles = map[string]func(context.Context, *Config, *Stats) error{
	"c2": RunC2, "c1": RunC1, "h": RunH, "host": RunHost, "wan": RunWAN,
}

// RunOptions configure Run beyond the role's Config.
type RunOptions struct {
	Listen   string // address for /metrics; empty: none
	Version  string
	Revision string
}

// Run gives cfg a seed when it has none (cfg.Seed 0: from the host id and
// the clock), serves the metrics on o.Listen when set and runs role (a key
// of Roles) to its end, and gives the role's summary. A *cli.UsageError is
// a bad setting (exit 2); any other error the role's failure (exit 1).
func Run(ctx context.Context, role string, cfg *Config, o RunOptions, stderr io.Writer) (map[string]any, error) {
	if cfg.Seed == 0 {
		cfg.Seed = int64(cfg.ID)*7919 + time.Now().UnixNano()%7919
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil))
	st := NewStats(role)
	if o.Listen != "" {
		reg, err := metrics.AgentRegistry(metrics.Config{Version: o.Version, Revision: o.Revision}, "converter", st)
		if err != nil {
			return nil, cli.Usagef("%v", err)
		}
		go func() { _ = metrics.ListenAndServe(ctx, o.Listen, metrics.NewHandler(reg, logger), logger) }()
	}
	if err := Roles[role](ctx, cfg, st); err != nil {
		return nil, err
	}
	return st.Summary(), nil
}

// CheckFlags checks the sizes, times and rates of cfg for role, with
// nHosts simulation hosts in the exercise; the error names the flag.
func (cfg *Config) CheckFlags(role string, nHosts int) error {
	source := role == "h" || role == "host" || role == "wan"
	switch {
	case cfg.Size < MinSize || cfg.Size > 1400:
		return fmt.Errorf("--size %d: %d..1400 bytes (address, header, payload)", cfg.Size, MinSize)
	case cfg.Interval <= 0 || cfg.Duration <= 0:
		return fmt.Errorf("--interval and --duration must be > 0")
	case cfg.MaxBundle < cfg.Size+8 || cfg.MaxBundle > 65507:
		return fmt.Errorf("--max-bundle %d: %d..65507 (one message and its trailer, one UDP datagram)", cfg.MaxBundle, cfg.Size+8)
	case role == "c1" && cfg.MTU < cfg.Size:
		return fmt.Errorf("--mtu %d is smaller than a message (%d)", cfg.MTU, cfg.Size)
	case source && role != "wan" && (cfg.ID < 1 || cfg.ID > nHosts):
		return fmt.Errorf("--id %d: 1..%d (--hosts)", cfg.ID, nHosts)
	case source && cfg.Rate < 0:
		return fmt.Errorf("--rate must be >= 0")
	}
	return nil
}

// SetC2Flags sets C_2's own settings of cfg from its flags: c1s, the C_1s'
// address:port comma-separated (at most 6), and the capacities of its links
// to the hosts and to the C_1s as tc-style rates; the error names the flag.
func (cfg *Config) SetC2Flags(c1s, hostCap, c1Cap string) error {
	var err error
	for _, s := range strings.Split(c1s, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return fmt.Errorf("--c1 %q: %v", s, err)
		}
		cfg.C1s = append(cfg.C1s, ap)
	}
	if len(cfg.C1s) > 6 {
		return fmt.Errorf("--c1: at most 6 router interfaces, not %d", len(cfg.C1s))
	}
	if cfg.HostCap, err = ParseRate(hostCap); err != nil {
		return fmt.Errorf("--host-capacity: %v", err)
	}
	if cfg.C1Cap, err = ParseRate(c1Cap); err != nil {
		return fmt.Errorf("--c1-capacity: %v", err)
	}
	return nil
}

// ParseRate reads tc-style rates: 10Mbit, 100mbit, 1Gbit, 64kbit, 5000bit.
func ParseRate(s string) (float64, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}} {
		if strings.HasSuffix(l, u.suffix) {
			l, mult = strings.TrimSuffix(l, u.suffix), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(l, 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("%q: a rate such as 10Mbit", s)
	}
	return v * mult, nil
}
