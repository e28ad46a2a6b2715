package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

func init() { Register("tls", tlsTransport{}) }

// tlsTransport is TCP (the tcp knobs) under crypto/tls 1.3. The responder
// makes a self-signed ECDSA P-256 certificate in memory when it starts
// listening; the initiator does not verify it (a lab measures cost, not
// trust) but pins TLS 1.3. Dial returns after the handshake, so
// connect_disconnect includes it.
type tlsTransport struct{}

func (tlsTransport) Name() string { return "tls" }

func (tlsTransport) Doc() string {
	return "TLS 1.3 over TCP (self-signed ECDSA P-256 made at listen, not verified by the initiator), length-prefixed messages inside TLS records; timeouts as tcp; Dial includes the handshake"
}

func (tlsTransport) Properties() Properties { return Properties{Connected: true, Stream: true} }
func (tlsTransport) Knobs() []Knob          { return tcpKnobs }
func (tlsTransport) Available() error       { return nil }

// alpn names the application protocol in TLS and QUIC handshakes.
const alpn = "protolab-spims"

func (t tlsTransport) Listen(addr string, o Options) (Listener, error) {
	cfg, err := parseTCPKnobs("tls", o.Knobs)
	if err != nil {
		return nil, err
	}
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13, NextProtos: []string{alpn}}
	lc := net.ListenConfig{Control: cfg.control}
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tls listen %s: %w", addr, err)
	}
	return &netListener{ln: ln, wrap: func(c net.Conn) (Conn, error) {
		tcp := c.(*net.TCPConn)
		return tlsWrap(tls.Server(tcp, tc), tcp, cfg)
	}}, nil
}

func (t tlsTransport) Dial(ctx context.Context, addr string, o Options) (Conn, error) {
	tcp, cfg, err := dialTCP(ctx, "tls", false, addr, o)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(tcp, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13, NextProtos: []string{alpn}})
	if err := tc.HandshakeContext(ctx); err != nil {
		tcp.Close()
		return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
	}
	return tlsWrap(tc, tcp, cfg)
}

func tlsWrap(tc *tls.Conn, tcp *net.TCPConn, cfg tcpConfig) (Conn, error) {
	rc, err := tcp.SyscallConn()
	if err != nil {
		return nil, err
	}
	var aerr error
	if err := rc.Control(func(fd uintptr) { aerr = cfg.apply(int(fd)) }); err != nil || aerr != nil {
		return nil, firstErr(err, aerr)
	}
	sc := newStreamConn(tc)
	sc.counters = func() map[string]uint64 { return tcpCounters(rc) }
	sc.dscp = func(d int) error { return setDSCPRaw(rc, d) }
	sc.tuning = func() map[string]string {
		m := tcpTuning(rc)
		st := tc.ConnectionState()
		if st.HandshakeComplete {
			m["tls_version"] = tls.VersionName(st.Version)
			m["tls_cipher_suite"] = tls.CipherSuiteName(st.CipherSuite)
		}
		return m
	}
	return sc, nil
}

// selfSigned makes a certificate for "protolab-spims", valid a day.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: alpn},
		DNSNames:     []string{alpn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
