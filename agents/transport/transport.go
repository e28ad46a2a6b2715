package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"
)

// Transport is one way of carrying messages between an initiator and a
// responder. Implementations register themselves in init() with Register.
type Transport interface {
	// Name is the registry name ("tcp", "quic", ...).
	Name() string
	// Doc is one line: what the transport is, its framing and what it does
	// about timeouts.
	Doc() string
	// Properties says which procedures make sense over the transport.
	Properties() Properties
	// Available returns nil when this host can run the transport, else why
	// not (for instance the kernel lacks the protocol).
	Available() error
	// Knobs lists the settings Options.Knobs may carry, with units.
	Knobs() []Knob
	// Listen opens a responder's listener on addr (host:port).
	Listen(addr string, o Options) (Listener, error)
	// Dial connects to addr (host:port), from o.Source when given; the
	// returned Conn has finished its handshake.
	Dial(ctx context.Context, addr string, o Options) (Conn, error)
}

// Properties of a transport.
type Properties struct {
	// Connected: setting up a connection is a real exchange with the peer,
	// so connect_disconnect measures something.
	Connected bool
	// Stream: messages travel on a reliable ordered stream, so a responder
	// may send many messages for one request (bulk_get).
	Stream bool
	// Urgent: its Conns are UrgentConns (TCP urgent data).
	Urgent bool
	// Multistream: its Conns are MultistreamConns (more streams on one
	// connection, as QUIC's).
	Multistream bool
}

// Options configure one listener or dial.
type Options struct {
	// Source is the local address to dial from ("10.0.1.1" or
	// "10.0.1.1:0"); empty lets the kernel choose. Ignored by Listen.
	Source string
	// Knobs are transport settings by name (see Transport.Knobs), values
	// with their units ("2s", "262144"). An unknown name is an error.
	Knobs map[string]string
}

// Knob is one setting of a transport.
type Knob struct {
	Name    string
	Kind    KnobKind
	Default string // "" when the kernel's default applies
	Help    string // with the unit
}

// KnobKind is how a knob's value is written.
type KnobKind int

const (
	KnobDuration KnobKind = iota // "200ms"
	KnobCount                    // "5", also bytes
	KnobBool                     // "true"
	KnobName                     // "cubic"
	KnobDSCP                     // "46" or "ef"
)

// Listener accepts connections of one transport.
type Listener interface {
	// Accept waits for the next connection; after Close it returns an error
	// wrapping net.ErrClosed.
	Accept() (Conn, error)
	Addr() net.Addr
	Close() error
}

// Conn carries whole messages. WriteMsg and ReadMsg may be used by two
// goroutines at once (one writing, one reading), not more.
type Conn interface {
	// WriteMsg sends one message of len(p) bytes (at most MaxFrame).
	WriteMsg(p []byte) error
	// ReadMsg returns the next message, in buf when it fits. After a
	// deadline error the partial message is kept and the next call goes on
	// with it.
	ReadMsg(buf []byte) ([]byte, error)
	// SetDeadline applies to both directions, as net.Conn's.
	SetDeadline(t time.Time) error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	// Tuning describes the settings in force, read back from the socket
	// where the kernel allows (congestion control, buffer sizes, ...).
	Tuning() map[string]string
	// Counters are the transport's own event counts so far (TCP
	// retransmissions, UDP retries, ...).
	Counters() map[string]uint64
	// SetDSCP marks what this Conn sends from now on with DiffServ code
	// point dscp (0..63), as the dscp knob does for a whole socket; a
	// responder uses it for the mark its initiator asked for.
	SetDSCP(dscp int) error
	Close() error
}

// BatchReader is a Conn whose reader can be told what comes next without
// a reply, so that the kernel wakes it once per batch of bytes rather than
// once per segment (SO_RCVLOWAT on a kernel TCP or MPTCP socket; other
// streams take the call and read as before). See streamConn.ExpectMessages.
type BatchReader interface {
	Conn
	// ExpectMessages: the peer's next n messages, size bytes each, come
	// without this side sending; called from the reading goroutine.
	ExpectMessages(n, size int)
}

// UrgentConn is a Conn that can mark a message as TCP urgent data
// (Properties.Urgent). TCP's urgent data is one out-of-band byte and a
// pointer to it: it marks a place in the stream, it does not overtake the
// bytes queued before it.
type UrgentConn interface {
	Conn
	// WriteUrgent sends message p as WriteMsg does, its last byte with
	// send(2) MSG_OOB: the urgent pointer marks the message's end, and
	// every byte of it travels in-band, in order.
	WriteUrgent(p []byte) error
	// UrgentInline leaves urgent bytes in the stream on this, the
	// receiving, side (SO_OOBINLINE), so an urgent message is read as any
	// other; without it the kernel takes each urgent byte out of the stream
	// and the framing breaks.
	UrgentInline() error
}

// MultistreamConn is a Conn on a connection that carries more streams
// beside its own (Properties.Multistream): each opened stream is a Conn of
// its own, sharing the connection's congestion control but not its order,
// so a message on one is not held up by loss on another.
type MultistreamConn interface {
	Conn
	// OpenStream opens a stream; the peer learns of it with its first
	// message.
	OpenStream(ctx context.Context) (Conn, error)
	// AcceptStream waits for the next stream the peer opened.
	AcceptStream(ctx context.Context) (Conn, error)
}

// ErrUnavailable is wrapped by every Available error.
var ErrUnavailable = errors.New("transport not available here")

var (
	mu       sync.Mutex
	registry = map[string]Transport{}
)

// Register adds t under name; from init(). A name registered twice panics.
func Register(name string, t Transport) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("transport: %q registered twice", name))
	}
	registry[name] = t
}

// Names lists the registered transports, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns the transport registered as name; an unknown name is an
// error listing the registered ones.
func Get(name string) (Transport, error) {
	mu.Lock()
	t, ok := registry[name]
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown transport %q (registered: %s)", name, strings.Join(Names(), ", "))
	}
	return t, nil
}

// timeoutError is a net.Error whose Timeout is true.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string   { return e.msg }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }
func (e *timeoutError) Unwrap() error   { return errTimeout }

var errTimeout = errors.New("timeout")

// IsTimeout reports whether err is a deadline or retry timeout, after which
// the Conn is still usable.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
