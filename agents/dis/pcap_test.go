package dis

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// inetChecksum is an independent RFC 1071 checksum for the test.
func inetChecksum(chunks ...[]byte) uint16 {
	var all []byte
	for _, c := range chunks {
		all = append(all, c...)
	}
	if len(all)%2 == 1 {
		all = append(all, 0)
	}
	var s uint64
	for i := 0; i < len(all); i += 2 {
		s += uint64(all[i])<<8 | uint64(all[i+1])
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func TestWritePCAPFormat(t *testing.T) {
	pdus := samples()
	var buf bytes.Buffer
	if err := WritePCAP(&buf, pdus); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	le := binary.LittleEndian
	if le.Uint32(b) != 0xa1b2c3d4 || le.Uint16(b[4:]) != 2 || le.Uint16(b[6:]) != 4 ||
		le.Uint32(b[16:]) != 65535 || le.Uint32(b[20:]) != 1 {
		t.Fatalf("global header % x", b[:24])
	}
	b = b[24:]
	for i, p := range pdus {
		if len(b) < 16 {
			t.Fatalf("record %d missing", i)
		}
		sec, usec, incl, orig := le.Uint32(b), le.Uint32(b[4:]), int(le.Uint32(b[8:])), int(le.Uint32(b[12:]))
		if sec != PCAPBaseTime || usec != uint32(i*1000) || incl != orig || incl != 42+p.Len() {
			t.Fatalf("record %d header: %d.%06d incl %d orig %d", i, sec, usec, incl, orig)
		}
		pkt := b[16 : 16+incl]
		b = b[16+incl:]
		if binary.BigEndian.Uint16(pkt[12:]) != 0x0800 {
			t.Fatalf("ethertype % x", pkt[12:14])
		}
		ip, udp, payload := pkt[14:34], pkt[34:42], pkt[42:]
		if ip[0] != 0x45 || ip[9] != 17 || int(binary.BigEndian.Uint16(ip[2:])) != 28+p.Len() {
			t.Fatalf("IPv4 header % x", ip)
		}
		if inetChecksum(ip) != 0 {
			t.Errorf("record %d: bad IPv4 checksum", i)
		}
		if binary.BigEndian.Uint16(udp[0:]) != 3000 || binary.BigEndian.Uint16(udp[2:]) != 3000 ||
			int(binary.BigEndian.Uint16(udp[4:])) != 8+p.Len() {
			t.Fatalf("UDP header % x", udp)
		}
		pseudo := append(append([]byte{}, ip[12:20]...), 0, 17, udp[4], udp[5])
		if inetChecksum(pseudo, udp, payload) != 0 {
			t.Errorf("record %d: bad UDP checksum", i)
		}
		if want := mustMarshal(t, p); !bytes.Equal(payload, want) {
			t.Errorf("record %d payload differs", i)
		}
	}
	if len(b) != 0 {
		t.Errorf("%d trailing bytes", len(b))
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n--; w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWritePCAPErrors(t *testing.T) {
	for n := 0; n < 3; n++ {
		if err := WritePCAP(&failWriter{n: n}, samples()); err == nil || err.Error() != "disk full" {
			t.Errorf("write failure after %d writes: %v", n, err)
		}
	}
	bad := []PDU{&EntityStatePDU{ArticulationParameters: make([]ArticulationParameter, 256)}}
	if err := WritePCAP(io.Discard, bad); !errors.Is(err, ErrCount) {
		t.Errorf("bad PDU: %v", err)
	}
	if err := WritePCAPPayloads(io.Discard, [][]byte{make([]byte, MaxPDUSize+1)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized payload: %v", err)
	}
}

// --- Cross-check against Wireshark's DIS dissector -----------------------

type tsharkField struct{ key, val string }

// tsharkPackets runs tshark on a pcap file and returns, per packet, the
// leaf fields of its JSON dissection in order (duplicate keys kept).
func tsharkPackets(t *testing.T, tshark, pcap string) [][]tsharkField {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tshark, "-r", pcap, "-T", "json",
		"-d", "udp.port==3000,dis",
		"-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		t.Fatalf("tshark JSON does not start with an array: %v %v", tok, err)
	}
	var pkts [][]tsharkField
	for dec.More() {
		var fields []tsharkField
		if err := flattenJSON(dec, "", &fields); err != nil {
			t.Fatalf("tshark JSON: %v", err)
		}
		pkts = append(pkts, fields)
	}
	return pkts
}

func flattenJSON(dec *json.Decoder, key string, out *[]tsharkField) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				if strings.HasPrefix(k, "_ws.") {
					*out = append(*out, tsharkField{k, ""}) // mark presence of expert/malformed subtrees
				}
				if err := flattenJSON(dec, k, out); err != nil {
					return err
				}
			}
		case '[':
			for dec.More() {
				if err := flattenJSON(dec, key, out); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // closing delimiter
		return err
	case string:
		*out = append(*out, tsharkField{key, v})
	default:
		*out = append(*out, tsharkField{key, fmt.Sprint(v)})
	}
	return nil
}

func values(fields []tsharkField, key string) []string {
	var vs []string
	for _, f := range fields {
		if f.key == key {
			vs = append(vs, f.val)
		}
	}
	return vs
}

// problems lists Wireshark's malformed-packet marks and expert infos of
// severity error or worse.
func problems(fields []tsharkField) []string {
	var ps []string
	for i, f := range fields {
		switch {
		case f.key == "_ws.malformed" && f.val != "":
			ps = append(ps, f.val)
		case f.key == "_ws.expert.severity":
			if sev, err := strconv.Atoi(f.val); err == nil && sev >= 0x00800000 {
				msg := "expert error"
				for j := i - 1; j >= 0 && j >= i-4; j-- {
					if fields[j].key == "_ws.expert.message" {
						msg = fields[j].val
					}
				}
				ps = append(ps, msg)
			}
		case f.key == "_ws.malformed" || f.key == "_ws.expert":
			// presence markers; judged by the cases above
		case strings.HasSuffix(f.key, ".checksum.status") && f.val == "0":
			ps = append(ps, f.key+" bad")
		}
	}
	return ps
}

func entityIDs(fields []tsharkField) []EntityID {
	s, a, e := values(fields, "dis.entity_id_site"), values(fields, "dis.entity_id_application"), values(fields, "dis.entity_id_entity")
	var ids []EntityID
	for i := 0; i < len(s) && i < len(a) && i < len(e); i++ {
		ids = append(ids, EntityID{atou16(s[i]), atou16(a[i]), atou16(e[i])})
	}
	return ids
}

func atou16(s string) uint16 {
	n, _ := strconv.ParseUint(s, 10, 16)
	return uint16(n)
}

const tsharkSkip = "tshark not installed: apt-get install tshark to cross-check against Wireshark's DIS dissector"

// TestTsharkDecodesEveryType writes one PDU of every type to a pcap file
// and checks Wireshark's own DIS dissector against what was encoded.
// Validated with tshark 4.0.17 (Debian 12), which dissects the bodies of
// Entity State, Fire, Detonation and Collision and only the header of the
// six logistics PDUs; for those the body is checked when a tshark that
// dissects it is used.
func TestTsharkDecodesEveryType(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip(tsharkSkip)
	}
	dir := t.TempDir()
	pdus := samples()
	good := filepath.Join(dir, "dis.pcap")
	f, err := os.Create(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePCAP(f, pdus); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	pkts := tsharkPackets(t, tshark, good)
	if len(pkts) != len(pdus) {
		t.Fatalf("tshark read %d packets, wrote %d", len(pkts), len(pdus))
	}
	for i, p := range pdus {
		fields := pkts[i]
		name := p.Type().String()
		if ps := problems(fields); len(ps) > 0 {
			t.Errorf("%s: tshark reports %v", name, ps)
		}
		one := func(key string) string {
			vs := values(fields, key)
			if len(vs) == 0 {
				t.Errorf("%s: tshark shows no %s", name, key)
				return ""
			}
			return vs[0]
		}
		eq := func(key, want string) {
			if got := one(key); got != want {
				t.Errorf("%s: %s = %q, want %q", name, key, got, want)
			}
		}
		num := func(key string, want float64) {
			got, err := strconv.ParseFloat(one(key), 64)
			if err != nil || math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
				t.Errorf("%s: %s = %v (%v), want %v", name, key, got, err, want)
			}
		}
		idsEq := func(want ...EntityID) {
			got := entityIDs(fields)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: entity ids %v, want %v", name, got, want)
			}
		}
		eventEq := func(want EventID) {
			eq("dis.site", strconv.Itoa(int(want.Site)))
			eq("dis.application", strconv.Itoa(int(want.Application)))
			eq("dis.event_number", strconv.Itoa(int(want.EventNumber)))
		}
		itoa := func(n int) string { return strconv.Itoa(n) }

		eq("dis.proto_ver", "6")
		eq("dis.exer_id", "7")
		eq("dis.pdu_type", itoa(int(p.Type())))
		eq("dis.proto_fam", itoa(int(p.Type().Family())))
		eq("dis.pdu_length", itoa(p.Len()))

		switch p := p.(type) {
		case *EntityStatePDU:
			idsEq(p.EntityID)
			eq("dis.force_id", itoa(int(p.ForceID)))
			eq("dis.num_articulation_params", itoa(len(p.ArticulationParameters)))
			num("dis.entity_location.x", p.Location.X)
			num("dis.entity_location.y", p.Location.Y)
			num("dis.entity_location.z", p.Location.Z)
			num("dis.entity_orientation.phi", float64(p.Orientation.Phi))
			eq("dis.appearance", fmt.Sprintf("0x%08x", p.Appearance))
			eq("dis.entity_marking", p.Marking.String())
			eq("dis.capabilities", itoa(int(p.Capabilities)))
			if got := values(fields, "dis.vp.artic_param_type"); fmt.Sprint(got) != "[4107 896]" {
				t.Errorf("%s: articulation parameter types %v", name, got)
			}
			// Wireshark reads an articulated part's value as float32.
			num("dis.vp.parameter_value", float64(p.ArticulationParameters[0].Float32()))
		case *FirePDU:
			idsEq(p.FiringEntityID, p.TargetEntityID, p.MunitionID)
			eventEq(p.EventID)
			eq("dis.fire.mission_index", strconv.FormatUint(uint64(p.FireMissionIndex), 10))
			num("dis.fire.location.x", p.Location.X)
			num("dis.fire.location.z", p.Location.Z)
			eq("dis.warhead", itoa(int(p.Burst.Warhead)))
			eq("dis.rate", itoa(int(p.Burst.Rate)))
			num("dis.range", float64(p.Range))
		case *DetonationPDU:
			idsEq(p.FiringEntityID, p.TargetEntityID, p.MunitionID)
			eventEq(p.EventID)
			num("dis.detonation.location.y", p.Location.Y)
			eq("dis.detonation.result", itoa(int(p.DetonationResult)))
			eq("dis.num_articulation_params", itoa(len(p.ArticulationParameters)))
			eq("dis.vp.artic_param_type", itoa(int(p.ArticulationParameters[0].ParameterType)))
		case *CollisionPDU:
			idsEq(p.IssuingEntityID, p.CollidingEntityID)
			eventEq(p.EventID)
			eq("dis.collision.type", itoa(int(p.CollisionType)))
			num("dis.collision.mass", float64(p.Mass))
			num("dis.collision.location.y", float64(p.Location.Y))
		default:
			want := logisticsIDs(p)
			if got := entityIDs(fields); len(got) == 0 {
				t.Logf("%s: this tshark dissects the header only; body not cross-checked", name)
			} else if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: entity ids %v, want %v", name, got, want)
			}
		}
	}

	// The checker itself must notice a broken PDU: a truncated Entity
	// State PDU is "Malformed" for Wireshark.
	bad := filepath.Join(dir, "bad.pcap")
	f, err = os.Create(bad)
	if err != nil {
		t.Fatal(err)
	}
	es := mustMarshal(t, pdus[0])
	if err := WritePCAPPayloads(f, [][]byte{es[:100]}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if ps := problems(tsharkPackets(t, tshark, bad)[0]); len(ps) == 0 {
		t.Error("tshark found nothing wrong with a truncated Entity State PDU: the malformed check is blind")
	}
}

func logisticsIDs(p PDU) []EntityID {
	switch p := p.(type) {
	case *ServiceRequestPDU:
		return []EntityID{p.RequestingEntityID, p.ServicingEntityID}
	case *ResupplyOfferPDU:
		return []EntityID{p.ReceivingEntityID, p.SupplyingEntityID}
	case *ResupplyReceivedPDU:
		return []EntityID{p.ReceivingEntityID, p.SupplyingEntityID}
	case *ResupplyCancelPDU:
		return []EntityID{p.ReceivingEntityID, p.SupplyingEntityID}
	case *RepairCompletePDU:
		return []EntityID{p.ReceivingEntityID, p.RepairingEntityID}
	case *RepairResponsePDU:
		return []EntityID{p.ReceivingEntityID, p.RepairingEntityID}
	}
	return nil
}
