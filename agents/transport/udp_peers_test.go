package transport

import (
	"context"
	"testing"
	"time"
)

// Datagrams from new sources past maxPeers are dropped: no peer, no queue
// for them, until a peer ends; then the next is taken.
func TestUDPListenerBoundsItsPeers(t *testing.T) {
	tr, _ := Get("udp")
	ln, err := tr.Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	l := ln.(*udpListener)
	l.mu.Lock()
	l.maxPeers = 2
	l.mu.Unlock()
	accepted := make(chan Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var peers, clients []Conn
	for i := range 3 {
		c, err := tr.Dial(context.Background(), ln.Addr().String(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
		if err := c.WriteMsg([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		select {
		case p := <-accepted:
			if i == 2 {
				t.Fatalf("a third peer accepted past maxPeers 2")
			}
			peers = append(peers, p)
		case <-time.After(300 * time.Millisecond):
			if i < 2 {
				t.Fatalf("peer %d not accepted", i)
			}
		}
	}
	l.mu.Lock()
	n := len(l.peers)
	l.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d peers, want 2", n)
	}
	peers[0].Close()
	if err := clients[2].WriteMsg([]byte{2}); err != nil {
		t.Fatal(err)
	}
	select { // the third initiator is taken now
	case p := <-accepted:
		if m, err := p.ReadMsg(nil); err != nil || len(m) != 1 || m[0] != 2 {
			t.Fatalf("the third peer's request: %v, %v", m, err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the third peer not accepted after one ended")
	}
}
