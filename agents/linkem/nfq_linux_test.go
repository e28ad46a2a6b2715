package linkem

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nfqPacketMsg builds an NFQNL_MSG_PACKET netlink message as the kernel
// sends it.
func nfqPacketMsg(id uint32, payload []byte, capLen uint32) []byte {
	attr := func(typ uint16, val []byte) []byte {
		b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(val)))
		b = binary.NativeEndian.AppendUint16(b, typ)
		b = append(b, val...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	hdr := binary.BigEndian.AppendUint32(nil, id)
	hdr = append(hdr, 0x08, 0x00, 1) // hw_protocol, hook
	body := []byte{unix.AF_INET, 0, 0, 7}
	body = append(body, attr(nfqaPacketHdr, hdr)...)
	body = append(body, attr(0x8000|11, []byte{1, 2, 3, 4})...) // a nested attribute to skip
	if payload != nil {
		body = append(body, attr(nfqaPayload, payload)...)
	}
	if capLen != 0 {
		body = append(body, attr(nfqaCapLen, binary.BigEndian.AppendUint32(nil, capLen))...)
	}
	msg := binary.NativeEndian.AppendUint32(nil, uint32(unix.NLMSG_HDRLEN+len(body)))
	msg = binary.NativeEndian.AppendUint16(msg, nfnlSubsysQueue<<8|nfqnlMsgPacket)
	msg = append(msg, make([]byte, 10)...)
	return append(msg, body...)
}

func TestParseMessages(t *testing.T) {
	q := &Queue{logger: discardLogger()}
	payload := []byte{0x45, 1, 2, 3, 4, 5, 6}
	buf := append(nfqPacketMsg(17, payload, 0), nfqPacketMsg(18, payload[:4], 1500)...)
	// An error message in between is skipped.
	errMsg := binary.NativeEndian.AppendUint32(nil, unix.NLMSG_HDRLEN+4)
	errMsg = binary.NativeEndian.AppendUint16(errMsg, unix.NLMSG_ERROR)
	errMsg = append(errMsg, make([]byte, 10)...)
	errMsg = binary.NativeEndian.AppendUint32(errMsg, uint32(0xfffffffe)) // -ENOENT
	buf = append(buf, errMsg...)
	buf = append(buf, nfqPacketMsg(19, nil, 0)...)
	pkts := q.parseMessages(buf, nil)
	if len(pkts) != 3 {
		t.Fatalf("parsed %d packets, want 3", len(pkts))
	}
	if pkts[0].ID != 17 || !bytes.Equal(pkts[0].Data, payload) || pkts[0].Len != len(payload) {
		t.Errorf("packet 0: %+v", pkts[0])
	}
	if pkts[1].ID != 18 || len(pkts[1].Data) != 4 || pkts[1].Len != 1500 {
		t.Errorf("packet 1 (truncated copy): %+v", pkts[1])
	}
	if pkts[2].ID != 19 || pkts[2].Data != nil || pkts[2].Len != 0 {
		t.Errorf("packet 2 (no payload): %+v", pkts[2])
	}
	// Garbage does not panic.
	for i := 0; i < len(buf); i++ {
		q.parseMessages(buf[:i], nil)
	}
}

func TestAppendVerdict(t *testing.T) {
	b := appendVerdict(nil, 4242, &Verdict{ID: 0x01020304})
	if len(b) != 32 {
		t.Fatalf("accept verdict is %d bytes, want 32", len(b))
	}
	want := []byte{
		32, 0, 0, 0, // nlmsg_len (native endian, little on the test hosts)
		1, 3, // type NFNL_SUBSYS_QUEUE<<8 | NFQNL_MSG_VERDICT
		1, 0, // NLM_F_REQUEST
		0, 0, 0, 0, 0, 0, 0, 0, // seq, pid
		0, 0, 0x10, 0x92, // nfgenmsg: AF_UNSPEC, v0, res_id 4242 big endian
		12, 0, 2, 0, // NFQA_VERDICT_HDR
		0, 0, 0, 1, // NF_ACCEPT
		1, 2, 3, 4, // id
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 && !bytes.Equal(b, want) {
		t.Errorf("accept verdict\n %v\nwant\n %v", b, want)
	}
	d := appendVerdict(nil, 1, &Verdict{ID: 9, Drop: true, Data: []byte{1, 2, 3}})
	if len(d) != 32 || d[27] != 0 {
		t.Errorf("drop verdict %v: data must not be sent with a drop", d)
	}
	m := appendVerdict(nil, 1, &Verdict{ID: 9, Data: []byte{1, 2, 3, 4, 5}})
	if len(m) != 32+4+8 || binary.NativeEndian.Uint32(m) != uint32(len(m)) {
		t.Errorf("modified verdict is %d bytes (header says %d), want 44", len(m), binary.NativeEndian.Uint32(m))
	}
	if !bytes.Equal(m[36:41], []byte{1, 2, 3, 4, 5}) || binary.NativeEndian.Uint16(m[34:]) != nfqaPayload {
		t.Errorf("modified verdict payload attribute wrong: %v", m[32:])
	}
}

// FuzzParseMessages feeds netlink datagrams as recvmmsg hands them over:
// whatever the bytes, parsing never panics, never reads outside the
// datagram, and returns at most one packet per message; a well-formed
// packet message (id, payload, cap_len taken from the input) parses back
// to exactly what it carries.
func FuzzParseMessages(f *testing.F) {
	payload := []byte{0x45, 1, 2, 3, 4, 5, 6}
	f.Add(nfqPacketMsg(17, payload, 0))
	f.Add(append(nfqPacketMsg(18, payload[:4], 1500), nfqPacketMsg(19, nil, 0)...))
	errMsg := binary.NativeEndian.AppendUint32(nil, unix.NLMSG_HDRLEN+4)
	errMsg = binary.NativeEndian.AppendUint16(errMsg, unix.NLMSG_ERROR)
	errMsg = append(errMsg, make([]byte, 10)...)
	f.Add(binary.NativeEndian.AppendUint32(errMsg, uint32(0xfffffffe)))
	f.Add([]byte{})
	q := &Queue{logger: discardLogger()}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := append([]byte(nil), b...)
		pkts := q.parseMessages(in, nil)
		if len(pkts) > len(in)/unix.NLMSG_HDRLEN {
			t.Fatalf("%d packets from %d bytes", len(pkts), len(in))
		}
		for i, p := range pkts {
			if len(p.Data) > len(in) || p.Len < len(p.Data) || p.Len < 0 {
				t.Fatalf("packet %d: %d data bytes, length %d, from a %d-byte datagram", i, len(p.Data), p.Len, len(in))
			}
			if len(p.Data) > 0 && !within(in, p.Data) {
				t.Fatalf("packet %d: data is not a part of the datagram", i)
			}
		}
		if !bytes.Equal(in, b) {
			t.Fatal("parsing changed the datagram")
		}

		// The same bytes as the id, cap_len and payload of a real message.
		if len(b) < 8 || len(b) > 60000 {
			return
		}
		id, capLen, data := binary.BigEndian.Uint32(b[0:4]), binary.BigEndian.Uint32(b[4:8])>>16, b[8:]
		got := q.parseMessages(nfqPacketMsg(id, data, capLen), nil)
		want := max(len(data), int(capLen))
		if len(got) != 1 || got[0].ID != id || !bytes.Equal(got[0].Data, data) || got[0].Len != want {
			t.Fatalf("message id %d, %d payload bytes, cap_len %d parsed as %+v", id, len(data), capLen, got)
		}
	})
}

// within tells whether sub lies inside b's memory.
func within(b, sub []byte) bool {
	if len(b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	s := uintptr(unsafe.Pointer(&sub[0]))
	return s >= start && s+uintptr(len(sub)) <= start+uintptr(len(b))
}
