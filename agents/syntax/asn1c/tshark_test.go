//go:build cgo

package asn1c

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"protolab/agents/dis"
	"protolab/agents/syntax"
)

// pdmlField is one node of tshark's PDML tree.
type pdmlField struct {
	Name     string      `xml:"name,attr"`
	Show     string      `xml:"show,attr"`
	ShowName string      `xml:"showname,attr"`
	Pos      int         `xml:"pos,attr"`
	Size     int         `xml:"size,attr"`
	Fields   []pdmlField `xml:"field"`
}

type pdmlPacket struct {
	Protos []struct {
		Name   string      `xml:"name,attr"`
		Fields []pdmlField `xml:"field"`
	} `xml:"proto"`
}

// berTree returns, per frame, the fields tshark's generic BER dissector
// made of the UDP payload (the "fake-field-wrapper" protos after udp).
func berTree(t *testing.T, tshark, pcap string) [][]pdmlField {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, tshark, "-r", pcap, "-d", "udp.port==3000,ber", "-T", "pdml")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	var doc struct {
		Packets []pdmlPacket `xml:"packet"`
	}
	if err := xml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("tshark PDML: %v", err)
	}
	var frames [][]pdmlField
	for _, p := range doc.Packets {
		var fs []pdmlField
		afterUDP := false
		for _, pr := range p.Protos {
			if pr.Name == "udp" {
				afterUDP = true
			} else if afterUDP {
				fs = append(fs, pr.Fields...)
			}
		}
		frames = append(frames, fs)
	}
	return frames
}

// primitives lists the primitive TLVs under fs in tree order as
// "tag=hex value", and every field tshark marked as a problem.
func primitives(fs []pdmlField, leaves, bad *[]string) {
	for _, f := range fs {
		if strings.HasPrefix(f.Name, "_ws.malformed") || strings.HasPrefix(f.Name, "_ws.expert") ||
			strings.Contains(f.Name, "error") || strings.Contains(f.ShowName, "Malformed") {
			*bad = append(*bad, f.Name+": "+f.ShowName+f.Show)
		}
		if f.Name == "ber.unknown.primitive" {
			*leaves = append(*leaves, f.ShowName)
		}
		primitives(f.Fields, leaves, bad)
	}
}

// tsharkProblems checks tshark's BER tree fs of p's encoding: one
// top-level element tagged as p's CHOICE alternative, no error, one
// primitive value per leaf the module defines, the header's timestamp
// among them.
func tsharkProblems(p dis.PDU, fs []pdmlField) []string {
	if len(fs) != 1 {
		return []string{fmt.Sprintf("%d top-level BER elements, want 1", len(fs))}
	}
	var out []string
	if want := fmt.Sprintf("[CONTEXT %d]", p.Type()); fs[0].Show != want {
		out = append(out, fmt.Sprintf("outermost tag %q, want %q (the CHOICE alternative)", fs[0].Show, want))
	}
	var leaves, bad []string
	primitives(fs, &leaves, &bad)
	if len(bad) > 0 {
		out = append(out, fmt.Sprintf("tshark found problems: %v", bad))
	}
	comp := syntax.Compose(p)
	if n := comp.Integers + comp.Reals + comp.OctetStrings; len(leaves) != n {
		out = append(out, fmt.Sprintf("tshark found %d primitive values, the module defines %d (%+v)", len(leaves), n, comp))
	}
	ts := syntax.HeaderOf(p).Timestamp
	want := hex.EncodeToString([]byte{byte(ts >> 24), byte(ts >> 16), byte(ts >> 8), byte(ts)})
	found := false
	for _, l := range leaves {
		found = found || strings.HasSuffix(l, " "+want)
	}
	if !found {
		out = append(out, fmt.Sprintf("the header's timestamp %s is not among tshark's values", want))
	}
	return out
}

func writePayloads(t *testing.T, path string, payloads [][]byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := dis.WritePCAPPayloads(f, payloads); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTsharkBER dissects this package's BER and DER encodings of every DIS
// type with Wireshark's own BER dissector (no DIS ASN.1 module: the generic
// tag/length/value walk): every frame parses without an error, the
// outermost tag is the PDU type's CHOICE alternative, and the primitive
// TLVs tshark finds are one per leaf value the module defines (integers,
// reals, octet strings: syntax.Compose), with the header's timestamp
// among them. Each encoding with its last octet cut must fail the same
// checks. Validated with tshark 4.0.17 (Debian 12).
func TestTsharkBER(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed: apt-get install tshark (make setup installs it) to cross-check BER against Wireshark")
	}
	pdus := syntax.Samples()
	for _, name := range []string{"ber", "der"} {
		t.Run(name, func(t *testing.T) {
			c := mustNew(t, name)
			var payloads, damaged [][]byte
			for _, p := range pdus {
				b, err := c.Append(nil, p)
				if err != nil {
					t.Fatal(err)
				}
				payloads = append(payloads, b)
				d := bytes.Clone(b[:len(b)-1]) // cut the last octet
				damaged = append(damaged, d)
			}
			dir := t.TempDir()
			writePayloads(t, filepath.Join(dir, "good.pcap"), payloads)
			writePayloads(t, filepath.Join(dir, "damaged.pcap"), damaged)
			good := berTree(t, tshark, filepath.Join(dir, "good.pcap"))
			bad := berTree(t, tshark, filepath.Join(dir, "damaged.pcap"))
			if len(good) != len(pdus) || len(bad) != len(pdus) {
				t.Fatalf("tshark read %d and %d frames, wrote %d each", len(good), len(bad), len(pdus))
			}
			for i, p := range pdus {
				if probs := tsharkProblems(p, good[i]); len(probs) > 0 {
					t.Errorf("%v: %v", p.Type(), probs)
				}
				if probs := tsharkProblems(p, bad[i]); len(probs) == 0 {
					t.Errorf("%v: the encoding cut short by one octet passed the tshark checks", p.Type())
				}
			}
		})
	}
}
