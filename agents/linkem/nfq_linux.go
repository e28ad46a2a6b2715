package linkem

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	nfqueue "github.com/florianl/go-nfqueue/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Copy ranges asked of the kernel: the first bytes of each packet (its IP
// and transport headers, and with them the packet length in NFQA_CAP_LEN)
// when nothing rewrites packets, whole packets when corruption or
// duplication is configured.
const (
	SmallCopyRange = 64
	FullCopyRange  = 0xffff
)

// KernelQueueMaxLen is the kernel-side queue length asked for: held packets
// stay in the kernel queue until their verdict, so it must exceed MaxLimit.
// Packets beyond it are dropped by the kernel (and counted in
// protolab_linkem_kernel_dropped_packets_total{cause="queue_full"}).
const KernelQueueMaxLen = MaxLimit + 31072

// RecvBufferBytes is the netlink socket receive buffer (set with
// SO_RCVBUFFORCE): the kernel drops packets it cannot hand to linkem when it
// is full (cause="socket_full").
const RecvBufferBytes = 32 << 20

// nfnetlink_queue protocol numbers not exported by go-nfqueue.
const (
	nfnlSubsysQueue    = 3
	nfqnlMsgConfig     = 2
	nfqaCfgParams      = 2
	nfqaCfgQueueMaxlen = 3
	nfqaCfgMask        = 4
	nfqaCfgFlags       = 5
	nfqaCfgFFailOpen   = 1
	nfqnlCopyPacket    = 2
)

// QueueOptions configure OpenQueue.
type QueueOptions struct {
	Queue uint16
	// NetNS is the path of the network namespace to work in ("" = the
	// process's own).
	NetNS string
	// FullCopy starts with whole-packet copies.
	FullCopy bool
	Logger   *slog.Logger
}

// Queue is the NFQUEUE side of linkem: it receives the packets of one
// queue number through github.com/florianl/go-nfqueue and implements
// Backend with its verdicts. Duplicates are injected with raw IP sockets
// (see Inject).
type Queue struct {
	nf     *nfqueue.Nfqueue
	num    uint16
	logger *slog.Logger

	full   atomic.Bool
	lastID atomic.Uint32
	seen   atomic.Bool

	raw4, raw6 int
	rawErr     error

	stats *os.File // this namespace's /proc/net/netfilter/nfnetlink_queue

	cancel  context.CancelFunc
	fatal   chan error
	errRun  atomic.Uint32
	closeMu sync.Mutex
	closed  bool
}

// OpenQueue opens a netlink socket for queue number o.Queue (not yet bound:
// see Start) and the raw sockets for duplicates, in o.NetNS.
func OpenQueue(o QueueOptions) (*Queue, error) {
	if o.Logger == nil {
		o.Logger = discardLogger()
	}
	q := &Queue{num: o.Queue, logger: o.Logger, raw4: -1, raw6: -1, fatal: make(chan error, 1)}
	copyRange := uint32(SmallCopyRange)
	if o.FullCopy {
		copyRange = FullCopyRange
	}
	q.full.Store(o.FullCopy)
	cfg := &nfqueue.Config{
		NfQueue:      o.Queue,
		MaxPacketLen: copyRange,
		MaxQueueLen:  KernelQueueMaxLen,
		Copymode:     nfqueue.NfQnlCopyPacket,
		AfFamily:     unix.AF_INET,
		Logger:       nfqLogger{o.Logger},
	}
	var nsFile *os.File
	if o.NetNS != "" {
		f, err := os.Open(o.NetNS)
		if err != nil {
			return nil, fmt.Errorf("opening network namespace: %w", err)
		}
		nsFile = f
		defer nsFile.Close()
		cfg.NetNS = int(f.Fd())
	}
	nf, err := nfqueue.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("opening netfilter queue socket: %w", err)
	}
	q.nf = nf
	if err := nf.SetOption(netlink.NoENOBUFS, true); err != nil {
		q.logger.Warn("could not set NETLINK_NO_ENOBUFS", "err", err)
	}
	if rc, err := nf.Con.SyscallConn(); err == nil {
		var serr error
		_ = rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, RecvBufferBytes)
		})
		if serr != nil {
			q.logger.Warn("could not enlarge the netlink receive buffer", "err", serr)
		}
	}
	// Raw sockets and the kernel statistics file belong to the namespace.
	_ = InNetNS(o.NetNS, func() error {
		q.raw4, q.rawErr = rawSocket(unix.AF_INET)
		if q.rawErr == nil {
			var err6 error
			q.raw6, err6 = rawSocket(unix.AF_INET6)
			if err6 != nil {
				q.raw6 = -1 // IPv6 disabled: IPv4 duplicates still work
			}
		}
		if f, err := os.Open("/proc/thread-self/net/netfilter/nfnetlink_queue"); err == nil {
			q.stats = f
		} else if f, err := os.Open("/proc/net/netfilter/nfnetlink_queue"); err == nil && o.NetNS == "" {
			q.stats = f
		}
		return nil
	})
	return q, nil
}

func rawSocket(family int) (int, error) {
	fd, err := unix.Socket(family, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return -1, fmt.Errorf("raw socket (needs CAP_NET_RAW): %w", err)
	}
	return fd, nil
}

// Start binds the queue and calls arrive for every packet from a goroutine
// of the library, until Close. A bind failure (queue taken by another
// process, no CAP_NET_ADMIN) is returned.
func (q *Queue) Start(arrive func(Packet)) error {
	ctx, cancel := context.WithCancel(context.Background())
	q.cancel = cancel
	fn := func(a nfqueue.Attribute) int {
		if a.PacketID == nil {
			return 0
		}
		q.errRun.Store(0)
		id := *a.PacketID
		q.lastID.Store(id)
		q.seen.Store(true)
		var data []byte
		if a.Payload != nil {
			data = *a.Payload
		}
		n := len(data)
		if a.CapLen != nil && int(*a.CapLen) > n {
			n = int(*a.CapLen)
		}
		arrive(Packet{ID: id, Len: n, Data: data})
		return 0
	}
	errfn := func(err error) int {
		if ctx.Err() != nil {
			return 1
		}
		if errors.Is(err, unix.ENOBUFS) {
			return 0
		}
		if n := q.errRun.Add(1); n <= 3 {
			q.logger.Warn("netfilter queue receive error", "err", err)
		} else if n > 1000 {
			select {
			case q.fatal <- fmt.Errorf("netfilter queue: giving up after repeated receive errors: %w", err):
			default:
			}
			return 1
		}
		return 0
	}
	if err := q.nf.RegisterWithErrorFunc(ctx, fn, errfn); err != nil {
		cancel()
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("binding netfilter queue %d: %w (needs CAP_NET_ADMIN; or the queue is bound by another process)", q.num, err)
		}
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("binding netfilter queue %d: %w (another process is bound to this queue)", q.num, err)
		}
		return fmt.Errorf("binding netfilter queue %d: %w", q.num, err)
	}
	return nil
}

// Fatal delivers an error if the receive loop gave up.
func (q *Queue) Fatal() <-chan error { return q.fatal }

// Accept implements Backend.
func (q *Queue) Accept(id uint32, data []byte) error {
	if data == nil {
		return q.nf.SetVerdict(id, nfqueue.NfAccept)
	}
	return q.nf.SetVerdictWithOption(id, nfqueue.NfAccept, nfqueue.WithAlteredPacket(data))
}

// Drop implements Backend.
func (q *Queue) Drop(id uint32) error { return q.nf.SetVerdict(id, nfqueue.NfDrop) }

// CanInject implements Backend.
func (q *Queue) CanInject() error {
	if q.raw4 < 0 {
		return fmt.Errorf("duplicates are injected through a raw IP socket, which could not be opened: %w", q.rawErr)
	}
	return nil
}

// Inject implements Backend: it sends data, a whole IP packet, through a
// raw socket (IP_HDRINCL) of the namespace, to its own destination. For a
// packet addressed to this namespace the copy is delivered locally through
// lo, so the orchestrator's NFQUEUE rule must match the data-plane
// interface (-i IFACE) for the copy not to be queued again.
func (q *Queue) Inject(data []byte) error {
	if len(data) < 20 {
		return errors.New("inject: packet too short")
	}
	switch data[0] >> 4 {
	case 4:
		if q.raw4 < 0 {
			return q.CanInject()
		}
		sa := &unix.SockaddrInet4{}
		copy(sa.Addr[:], data[16:20])
		return unix.Sendto(q.raw4, data, unix.MSG_DONTWAIT, sa)
	case 6:
		if q.raw6 < 0 || len(data) < 40 {
			return errors.New("inject: no IPv6 raw socket")
		}
		sa := &unix.SockaddrInet6{}
		copy(sa.Addr[:], data[24:40])
		return unix.Sendto(q.raw6, data, unix.MSG_DONTWAIT, sa)
	}
	return errors.New("inject: not an IP packet")
}

// SetCopyPayload implements Backend by re-sending the queue's copy
// parameters on the bound socket.
func (q *Queue) SetCopyPayload(full bool) error {
	if q.full.Load() == full {
		return nil
	}
	r := uint32(SmallCopyRange)
	if full {
		r = FullCopyRange
	}
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, r)
	params[4] = nfqnlCopyPacket
	if err := q.sendConfig([]netlink.Attribute{{Type: nfqaCfgParams, Data: params}}); err != nil {
		return err
	}
	q.full.Store(full)
	return nil
}

// sendConfig sends an NFQNL_MSG_CONFIG for this queue without asking for
// an acknowledgement (the library's goroutine owns the receive side; an
// error would come back there and be logged). The kernel applies it before
// sendmsg returns.
func (q *Queue) sendConfig(attrs []netlink.Attribute) error {
	b, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		return err
	}
	hdr := []byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, 0}
	binary.BigEndian.PutUint16(hdr[2:], q.num)
	_, err = q.nf.Con.Send(netlink.Message{
		Header: netlink.Header{
			Type:  netlink.HeaderType(nfnlSubsysQueue<<8 | nfqnlMsgConfig),
			Flags: netlink.Request,
		},
		Data: append(hdr, b...),
	})
	return err
}

// failOpen makes the kernel stop queueing: with the queue length set to 0
// and the fail-open flag, every new packet is accepted by the kernel at
// once instead of being queued (or dropped).
func (q *Queue) failOpen() error {
	be := func(v uint32) []byte {
		b := make([]byte, 4)
		binary.BigEndian.PutUint32(b, v)
		return b
	}
	return q.sendConfig([]netlink.Attribute{
		{Type: nfqaCfgQueueMaxlen, Data: be(0)},
		{Type: nfqaCfgMask, Data: be(nfqaCfgFFailOpen)},
		{Type: nfqaCfgFlags, Data: be(nfqaCfgFFailOpen)},
	})
}

// acceptAll accepts, with one batch verdict, every packet still in the
// kernel queue, including ones linkem has not read yet.
func (q *Queue) acceptAll() error {
	if !q.seen.Load() {
		return nil
	}
	return q.nf.SetVerdictBatch(q.lastID.Load()+KernelQueueMaxLen+1024, nfqueue.NfAccept)
}

// Shutdown stops the queue without stranding a packet: the kernel is told
// to stop queueing (new packets pass at once), drain releases what linkem
// holds, a batch verdict accepts whatever is left in the kernel queue, and
// only then is the queue unbound and the socket closed.
func (q *Queue) Shutdown(drain func()) error {
	q.closeMu.Lock()
	defer q.closeMu.Unlock()
	if q.closed {
		return nil
	}
	q.closed = true
	var errs []error
	if q.cancel != nil {
		if err := q.failOpen(); err != nil {
			errs = append(errs, fmt.Errorf("setting fail-open: %w", err))
		}
	}
	if drain != nil {
		drain()
	}
	if q.cancel != nil {
		if err := q.acceptAll(); err != nil {
			errs = append(errs, fmt.Errorf("accepting queued packets: %w", err))
		}
		q.cancel()
	}
	if err := q.nf.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing queue: %w", err))
	}
	for _, fd := range []int{q.raw4, q.raw6} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	if q.stats != nil {
		q.stats.Close()
	}
	return errors.Join(errs...)
}

// KernelStats reads this queue's line of the namespace's
// /proc/net/netfilter/nfnetlink_queue.
func (q *Queue) KernelStats() (KernelQueueStats, error) {
	if q.stats == nil {
		return KernelQueueStats{}, errors.New("nfnetlink_queue statistics not available")
	}
	q.closeMu.Lock()
	defer q.closeMu.Unlock()
	if q.closed {
		return KernelQueueStats{}, os.ErrClosed
	}
	if _, err := q.stats.Seek(0, 0); err != nil {
		return KernelQueueStats{}, err
	}
	buf := make([]byte, 64<<10)
	n, err := q.stats.Read(buf)
	if err != nil && n == 0 {
		return KernelQueueStats{}, err
	}
	return parseKernelStats(buf[:n], q.num)
}

type nfqLogger struct{ l *slog.Logger }

func (n nfqLogger) Debugf(format string, args ...interface{}) {
	n.l.Debug(fmt.Sprintf(format, args...))
}

func (n nfqLogger) Errorf(format string, args ...interface{}) {
	n.l.Debug(fmt.Sprintf(format, args...))
}
