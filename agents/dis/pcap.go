package dis

import (
	"encoding/binary"
	"io"
)

// Port is the customary DIS UDP port, the one Wireshark's DIS dissector
// listens on by default.
const Port = 3000

// PCAP frame addressing used by WritePCAP: a locally administered source
// MAC, Ethernet broadcast, and IPv4 addresses from the RFC 5737
// documentation range. The file is for dissector cross-checks only; no
// traffic is ever sent.
var (
	pcapSrcMAC = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	pcapDstMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	pcapSrcIP  = [4]byte{192, 0, 2, 1}
	pcapDstIP  = [4]byte{192, 0, 2, 255}
)

const (
	pcapEthSize  = 14
	pcapIPv4Size = 20
	pcapUDPSize  = 8
	// PCAPBaseTime is the capture time (Unix seconds) of the first frame
	// written by WritePCAP; frame i is stamped i milliseconds later, so the
	// output is deterministic.
	PCAPBaseTime = 1_000_000_000
)

// WritePCAP writes a classic libpcap capture file (magic 0xa1b2c3d4,
// version 2.4, microsecond timestamps, link type 1 = Ethernet) with one
// frame per PDU: Ethernet II + IPv4 + UDP from port 3000 to port 3000,
// carrying the PDU's encoding as the UDP payload. IPv4 and UDP checksums
// are computed. Tools such as `tshark -r file -V -Y dis` dissect it as
// DIS. It returns the first encoding or write error.
func WritePCAP(w io.Writer, pdus []PDU) error {
	pw, err := newPCAPWriter(w)
	if err != nil {
		return err
	}
	for _, p := range pdus {
		pw.frame, err = AppendMarshal(pw.frame[:pcapPrefix], p)
		if err != nil {
			return err
		}
		if err := pw.writeFrame(); err != nil {
			return err
		}
	}
	return nil
}

// WritePCAPPayloads is WritePCAP for UDP payloads given as bytes: raw or
// deliberately malformed PDUs, or PDUs behind a message address prefix.
// Payloads longer than MaxPDUSize are rejected with ErrTooLarge.
func WritePCAPPayloads(w io.Writer, payloads [][]byte) error {
	pw, err := newPCAPWriter(w)
	if err != nil {
		return err
	}
	for _, p := range payloads {
		if len(p) > MaxPDUSize {
			return &Error{Op: "encode", Field: "UDP payload", Offset: -1, Err: ErrTooLarge,
				Detail: itoa(len(p)) + " bytes, maximum is " + itoa(MaxPDUSize)}
		}
		pw.frame = append(pw.frame[:pcapPrefix], p...)
		if err := pw.writeFrame(); err != nil {
			return err
		}
	}
	return nil
}

// pcapPrefix is the pcap record header plus the Ethernet, IPv4 and UDP
// headers that precede each payload in pcapWriter.frame.
const pcapPrefix = 16 + pcapEthSize + pcapIPv4Size + pcapUDPSize

type pcapWriter struct {
	w     io.Writer
	frame []byte
	n     int
}

func newPCAPWriter(w io.Writer) (*pcapWriter, error) {
	le := binary.LittleEndian
	var gh [24]byte
	le.PutUint32(gh[0:], 0xa1b2c3d4)
	le.PutUint16(gh[4:], 2)
	le.PutUint16(gh[6:], 4)
	// thiszone, sigfigs: 0
	le.PutUint32(gh[16:], 65535) // snaplen
	le.PutUint32(gh[20:], 1)     // LINKTYPE_ETHERNET
	if _, err := w.Write(gh[:]); err != nil {
		return nil, err
	}
	return &pcapWriter{w: w, frame: make([]byte, pcapPrefix, pcapPrefix+MaxPDUSize)}, nil
}

// writeFrame fills the headers of pw.frame, whose payload is in place, and
// writes it as the next record.
func (pw *pcapWriter) writeFrame() error {
	le := binary.LittleEndian
	rec, pkt := pw.frame[:16], pw.frame[16:]
	usec := uint64(pw.n) * 1000
	le.PutUint32(rec[0:], uint32(PCAPBaseTime+usec/1e6))
	le.PutUint32(rec[4:], uint32(usec%1e6))
	le.PutUint32(rec[8:], uint32(len(pkt)))
	le.PutUint32(rec[12:], uint32(len(pkt)))
	buildUDPFrame(pkt, uint16(pw.n))
	pw.n++
	_, err := pw.w.Write(pw.frame)
	return err
}

// buildUDPFrame fills the Ethernet, IPv4 and UDP headers of pkt, whose
// payload (the PDU) starts after them.
func buildUDPFrame(pkt []byte, id uint16) {
	eth := pkt[:pcapEthSize]
	copy(eth[0:6], pcapDstMAC[:])
	copy(eth[6:12], pcapSrcMAC[:])
	be.PutUint16(eth[12:], 0x0800)

	ip := pkt[pcapEthSize : pcapEthSize+pcapIPv4Size]
	ipLen := len(pkt) - pcapEthSize
	ip[0] = 0x45 // version 4, 20-byte header
	ip[1] = 0
	be.PutUint16(ip[2:], uint16(ipLen))
	be.PutUint16(ip[4:], id)
	be.PutUint16(ip[6:], 0x4000) // don't fragment
	ip[8] = 64                   // TTL
	ip[9] = 17                   // UDP
	ip[10], ip[11] = 0, 0
	copy(ip[12:16], pcapSrcIP[:])
	copy(ip[16:20], pcapDstIP[:])
	be.PutUint16(ip[10:], ^fold(sum16(0, ip)))

	udp := pkt[pcapEthSize+pcapIPv4Size:]
	be.PutUint16(udp[0:], Port)
	be.PutUint16(udp[2:], Port)
	be.PutUint16(udp[4:], uint16(len(udp)))
	udp[6], udp[7] = 0, 0
	// Pseudo-header: source, destination, protocol, UDP length.
	s := sum16(0, ip[12:20])
	s += 17 + uint32(len(udp))
	s = sum16(s, udp)
	cs := ^fold(s)
	if cs == 0 {
		cs = 0xffff
	}
	be.PutUint16(udp[6:], cs)
}

// sum16 adds b as big-endian 16-bit words (odd tail padded) to s.
func sum16(s uint32, b []byte) uint32 {
	for len(b) >= 2 {
		s += uint32(be.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
