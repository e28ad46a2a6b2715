package tp4

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// End to end over loopback UDP: a Sender and a Receiver in their Loops,
// the Feeder and the Meter as users, selective acknowledgement and NBS
// expedited data.
func TestLoopbackUDP(t *testing.T) {
	rc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	defer rc.Close()
	sc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	c := DefaultConfig()
	c.Ack, c.Expedited, c.Retransmit, c.PaceBitsPerSecond = Selective, ExpNBS, 300*time.Millisecond, 50e6
	s, _ := NewSender(c)
	r, _ := NewReceiver(c)
	meter := &Meter{Size: 10240}
	r.OnTSDU, r.OnExpedited = meter.TSDU, meter.Expedited
	feed := &Feeder{TSDUs: 30, Size: 10240, Every: 5}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rmu, smu sync.Mutex
	rl := &Loop{Conn: rc, EP: r, Mu: &rmu, Linger: 100 * time.Millisecond}
	sl := &Loop{Conn: sc, EP: s, Mu: &smu, Peer: rc.LocalAddr().(*net.UDPAddr).AddrPort(),
		Hook: func(now time.Time) { _ = feed.Feed(s, now) }}
	var wg sync.WaitGroup
	var rerr error
	wg.Add(1)
	go func() { defer wg.Done(); rerr = rl.Run(ctx) }()
	s.Connect(time.Now())
	if err := sl.Run(ctx); err != nil {
		t.Fatalf("sender loop: %v", err)
	}
	wg.Wait()
	if rerr != nil {
		t.Fatalf("receiver loop: %v", rerr)
	}
	now := time.Now()
	ss, rs, ms := s.Stats(now), r.Stats(now), meter.Stats()
	if s.Err() != nil || ss.State != "closed" || rs.State != "closed" {
		t.Fatalf("sender %v (%v), receiver %v", ss.State, s.Err(), rs.State)
	}
	if ms.TSDUs != 30 || ms.Corrupt != 0 || ms.OutOfOrder != 0 || ms.Expedited != 6 {
		t.Fatalf("user got %+v", ms)
	}
	if !rl.Peer.IsValid() || rl.Peer != netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sc.LocalAddr().(*net.UDPAddr).Port)) {
		t.Errorf("receiver learned peer %v", rl.Peer)
	}
	t.Logf("loopback: %d TSDUs in %.3f s, %d DT retransmissions, receive buffer max %d octets, expedited delay %.2f ms",
		ms.TSDUs, ms.TransferSeconds(), ss.DTRetransmissions, rs.RecvBufferMax, ms.ExpDelayMean*1e3)
}
