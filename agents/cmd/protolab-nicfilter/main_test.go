package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadUsageExits2(t *testing.T) {
	self := fmt.Sprint(os.Getpid()) // a pid that exists
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badJSON := write("bad.json", `{"port": "lo"}`)
	unknownKey := write("unknown.json", `[{"port": "lo", "pid": 1, "ifname": "eth0", "mod": "hash64"}]`)
	noPort := write("noport.json", `[{"pid": `+self+`, "ifname": "eth0", "mode": "hash64"}]`)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", nil, "want the subcommand run"},
		{"other subcommand", []string{"start"}, "want the subcommand run"},
		{"no host", []string{"run"}, "no host"},
		{"unknown mode", []string{"run", "--port", "lo", "--pid", self, "--ifname", "eth0", "--mode", "hash32"}, `unknown NIC filter mode "hash32" (known: perfect, hash64, promiscuous)`},
		{"unknown default mode", []string{"run", "--mode", "fast", "--port", "lo", "--pid", self, "--ifname", "eth0"}, `mode "fast"`},
		{"pid before port", []string{"run", "--pid", self, "--port", "lo"}, "--pid before any --port"},
		{"pid not a number", []string{"run", "--port", "lo", "--pid", "h1", "--ifname", "eth0"}, `"h1" is not a process id`},
		{"pid zero", []string{"run", "--port", "lo", "--pid", "0", "--ifname", "eth0"}, `"0" is not a process id`},
		{"pid missing", []string{"run", "--port", "lo", "--ifname", "eth0"}, "missing or bad --pid"},
		{"no such process", []string{"run", "--port", "lo", "--pid", "2147483646", "--ifname", "eth0"}, "pid 2147483646: no such process"},
		{"no such port", []string{"run", "--port", "plab-nonexistent0", "--pid", self, "--ifname", "eth0"}, "no interface plab-nonexistent0"},
		{"port twice", []string{"run", "--port", "lo", "--pid", self, "--ifname", "eth0", "--port", "lo", "--pid", self, "--ifname", "eth0"}, "port lo given twice"},
		{"ifname missing", []string{"run", "--port", "lo", "--pid", self}, "missing --ifname"},
		{"empty port", []string{"run", "--port", "", "--pid", self, "--ifname", "eth0"}, "missing port"},
		{"config not a list", []string{"run", "--config", badJSON}, "want a JSON list"},
		{"config unknown key", []string{"run", "--config", unknownKey}, `unknown field "mod"`},
		{"config missing port", []string{"run", "--config", noPort}, "missing port"},
		{"config missing file", []string{"run", "--config", filepath.Join(dir, "none.json")}, "no such file"},
		{"config and port", []string{"run", "--config", noPort, "--port", "lo"}, "exclude each other"},
		{"poll too short", []string{"run", "--poll", "1ms", "--port", "lo", "--pid", self, "--ifname", "eth0"}, "--poll 1ms is out of range"},
		{"log level", []string{"run", "--log-level", "loud", "--port", "lo", "--pid", self, "--ifname", "eth0"}, "--log-level"},
		{"extra args", []string{"run", "--port", "lo", "--pid", self, "--ifname", "eth0", "now"}, "unexpected arguments: now"},
		{"unknown flag", []string{"run", "--rate", "10"}, "flag provided but not defined: -rate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runArgs(t, c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr: %s", code, errs)
			}
			if !strings.Contains(errs, c.want) {
				t.Errorf("stderr %q does not say %q", errs, c.want)
			}
			if strings.Contains(out, "ready") {
				t.Errorf("printed ready on bad input: %q", out)
			}
		})
	}
}

func TestAllProblemsOfAHostAreNamedAtOnce(t *testing.T) {
	code, _, errs := runArgs(t, "run", "--port", "plab-nonexistent0", "--mode", "hash32")
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, want := range []string{"no interface plab-nonexistent0", `mode "hash32"`, "missing or bad --pid", "missing --ifname"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q does not say %q", errs, want)
		}
	}
}

func TestHelpAndVersion(t *testing.T) {
	code, _, errs := runArgs(t, "run", "--help")
	if code != 0 || !strings.Contains(errs, "hash64") || !strings.Contains(errs, "-poll") {
		t.Errorf("--help: exit %d, output %q", code, errs)
	}
	code, out, _ := runArgs(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "protolab-nicfilter ") {
		t.Errorf("--version: exit %d, output %q", code, out)
	}
}

func TestModeDefaultsAndPerHostModes(t *testing.T) {
	self := fmt.Sprint(os.Getpid())
	hosts, _, _, _, err := parse([]string{"run", "--mode", "hash64", "--port", "lo", "--pid", self, "--ifname", "a"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 1 || hosts[0].Mode != "hash64" || hosts[0].IfName != "a" || hosts[0].PID != os.Getpid() {
		t.Errorf("hosts = %+v", hosts)
	}
	hosts, _, _, _, err = parse([]string{"run", "--port", "lo", "--pid", self, "--ifname", "a", "--mode", "promiscuous"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if hosts[0].Mode != "promiscuous" {
		t.Errorf("per-host mode: %+v", hosts)
	}
}
