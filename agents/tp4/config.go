package tp4

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// AckMode is the acknowledgement mechanism (paper sec. "One-for-one" and
// "Selective acknowledgement").
type AckMode uint8

// Acknowledgement mechanisms.
const (
	// OneForOne: an AK for every DT received, carrying only the next
	// expected sequence number; DTs after a gap are held but not confirmed.
	OneForOne AckMode = iota
	// Selective: as OneForOne, and a DT received after a gap is confirmed
	// on its own by the AK's optional sequence number (Fig. 3).
	Selective
)

func (m AckMode) String() string {
	if m == Selective {
		return "selective"
	}
	return "one-for-one"
}

// ParseAckMode reads "one-for-one" or "selective".
func ParseAckMode(s string) (AckMode, error) {
	switch strings.ToLower(s) {
	case "one-for-one", "oneforone", "one":
		return OneForOne, nil
	case "selective", "sack":
		return Selective, nil
	}
	return 0, fmt.Errorf("ack mode %q: want one-for-one or selective", s)
}

// ExpMode is the expedited data mechanism (paper sec. "ISO/NBS expedited
// data mechanism").
type ExpMode uint8

// Expedited data mechanisms.
const (
	// ExpISO: no new normal data is sent while an expedited TPDU is queued
	// or unacknowledged (retransmissions still go).
	ExpISO ExpMode = iota
	// ExpNBS: normal data the user handed over before the expedited data
	// may still be sent while its EA is awaited; later normal data waits.
	ExpNBS
)

func (m ExpMode) String() string {
	if m == ExpNBS {
		return "nbs"
	}
	return "iso"
}

// ParseExpMode reads "iso" or "nbs".
func ParseExpMode(s string) (ExpMode, error) {
	switch strings.ToLower(s) {
	case "iso":
		return ExpISO, nil
	case "nbs":
		return ExpNBS, nil
	}
	return 0, fmt.Errorf("expedited mode %q: want iso or nbs", s)
}

// Config holds one transport entity's parameters. Sizes are octets.
type Config struct {
	TPDUSize         int           // largest TPDU, header included: a power of two, 128..8192 (Table 2: 1024)
	Window           int           // window in octets; credit = Window / TPDUSize TPDUs (Table 2: 12 K)
	SendBuffer       int           // octets of user data held until acknowledged (Table 2: 32 K)
	RecvBuffer       int           // octets of user data held by the receiver (Table 2: 32 K)
	Retransmit       time.Duration // retransmission timer, per TPDU (Table 2: 2 s)
	WindowTimer      time.Duration // the receiver repeats its AK when it sent none for this long (Table 2: 6 s)
	Inactivity       time.Duration // the receiver gives up when nothing arrived for this long
	MaxTransmissions int           // a TPDU sent this often unacknowledged ends the connection (ISO's N)
	Ack              AckMode
	Expedited        ExpMode
	// PaceBitsPerSecond spaces the sender's TPDUs as a link of this rate
	// would (the paper's subnetwork access link); 0 sends at once. Each
	// TPDU counts with Overhead more octets (UDP + IPv4: 28).
	PaceBitsPerSecond float64
	Overhead          int
	// Ref is this entity's reference; 0 picks one at random.
	Ref uint16
	// MaxTSDU is the largest TSDU the receiver reassembles, octets (0:
	// MaxTSDUSize); a peer that sends more without an end of TSDU makes
	// the receiver give up the connection.
	MaxTSDU int
}

// MaxTSDUSize bounds a TSDU the receiver reassembles when Config.MaxTSDU
// does not say less: 16 MiB.
const MaxTSDUSize = 16 << 20

// maxTSDU is c's bound on a reassembled TSDU.
func (c Config) maxTSDU() int {
	if c.MaxTSDU == 0 {
		return MaxTSDUSize
	}
	return c.MaxTSDU
}

// DefaultConfig is Table 2's transport: TPDU 1024, window 12 K, buffers
// 32 K, retransmission timer 2 s, window timer 6 s; one-for-one, ISO.
func DefaultConfig() Config {
	return Config{
		TPDUSize: 1024, Window: 12 * 1024, SendBuffer: 32 * 1024, RecvBuffer: 32 * 1024,
		Retransmit: 2 * time.Second, WindowTimer: 6 * time.Second, Inactivity: 120 * time.Second,
		MaxTransmissions: 32, Overhead: 28,
	}
}

// Table3Config is Table 3's transport: TPDU 128, window 20 K, buffers
// 32 K, retransmission timer 650 ms, window timer 2 s, NBS expedited.
func Table3Config() Config {
	c := DefaultConfig()
	c.TPDUSize, c.Window, c.Retransmit, c.WindowTimer, c.Expedited = 128, 20*1024, 650*time.Millisecond, 2*time.Second, ExpNBS
	return c
}

// Validate says what is wrong with c, naming the field.
func (c Config) Validate() error {
	var errs []error
	if SizeLog(c.TPDUSize) == 0 {
		errs = append(errs, fmt.Errorf("TPDU size %d: want a power of two in %d..%d octets", c.TPDUSize, MinTPDUSize, MaxTPDUSize))
	}
	if c.TPDUSize > 0 && (c.Window < c.TPDUSize || c.Window/c.TPDUSize > 0xFFFF) {
		errs = append(errs, fmt.Errorf("window %d octets: want 1..65535 TPDUs of %d octets", c.Window, c.TPDUSize))
	}
	if c.SendBuffer <= 0 || c.RecvBuffer <= 0 {
		errs = append(errs, fmt.Errorf("buffers %d/%d octets: want > 0", c.SendBuffer, c.RecvBuffer))
	}
	if c.Retransmit <= 0 || c.WindowTimer <= 0 || c.Inactivity <= 0 {
		errs = append(errs, fmt.Errorf("timers (retransmission %v, window %v, inactivity %v): want > 0", c.Retransmit, c.WindowTimer, c.Inactivity))
	}
	if c.MaxTSDU < 0 || c.MaxTSDU > MaxTSDUSize {
		errs = append(errs, fmt.Errorf("max TSDU %d octets: want 1..%d (0: %d)", c.MaxTSDU, MaxTSDUSize, MaxTSDUSize))
	}
	if c.MaxTransmissions < 1 {
		errs = append(errs, fmt.Errorf("max transmissions %d: want >= 1", c.MaxTransmissions))
	}
	if c.PaceBitsPerSecond < 0 || c.Overhead < 0 {
		errs = append(errs, fmt.Errorf("pace %g bit/s, overhead %d octets: want >= 0", c.PaceBitsPerSecond, c.Overhead))
	}
	return errors.Join(errs...)
}

// credit is the window in TPDUs of size.
func (c Config) credit(size int) int { return max(1, c.Window/size) }
