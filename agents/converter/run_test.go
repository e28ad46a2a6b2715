package converter

import (
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"10Mbit": 10e6, "100mbit": 100e6, "1Gbit": 1e9, "64kbit": 64e3, "5000bit": 5000, " 2.5Mbit ": 2.5e6} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "Mbit", "0bit", "-1Mbit", "fast"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q): no error", in)
		}
	}
}

func TestSetC2Flags(t *testing.T) {
	var cfg Config
	if err := cfg.SetC2Flags("10.0.0.1:4000, ,10.0.0.2:4000", "10Mbit", "100Mbit"); err != nil {
		t.Fatal(err)
	}
	if len(cfg.C1s) != 2 || cfg.HostCap != 10e6 || cfg.C1Cap != 100e6 {
		t.Errorf("got %v %v %v", cfg.C1s, cfg.HostCap, cfg.C1Cap)
	}
	cfg = Config{}
	err := cfg.SetC2Flags(strings.Repeat("10.0.0.1:1,", 7), "10Mbit", "100Mbit")
	if err == nil || !strings.Contains(err.Error(), "at most 6") {
		t.Errorf("7 C_1s: %v", err)
	}
}
