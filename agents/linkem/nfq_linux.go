package linkem

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

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
	FullCopyRange  = 0xffff - 4 // NFQNL_MAX_COPY_RANGE: the kernel caps the range there
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
	nfqnlMsgPacket     = 0
	nfqnlMsgVerdict    = 1
	nfqnlMsgConfig     = 2
	nfqnlMsgVerdictBat = 3 // NFQNL_MSG_VERDICT_BATCH
	nfqaPacketHdr      = 1
	nfqaVerdictHdr     = 2
	nfqaPayload        = 10
	nfqaCapLen         = 13
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
	// BusyPoll, when above zero, keeps the receive goroutine polling the
	// socket (non-blocking reads) for this long after the last packet
	// before it goes back to waiting in the Go netpoller: the wake-up from
	// an idle CPU and the netpoller's hand-off (tens of microseconds on a
	// VM) are then paid only by the first packet of a burst, at the cost
	// of a busy CPU while packets keep coming (as the kernel's
	// SO_BUSY_POLL trades it for NIC queues).
	BusyPoll time.Duration
	Logger   *slog.Logger
}

// Queue is the NFQUEUE side of linkem: it receives the packets of one
// queue number through github.com/florianl/go-nfqueue and implements
// Backend with its verdicts. Duplicates are injected with raw IP sockets
// (see Inject).
type Queue struct {
	nf       *nfqueue.Nfqueue
	rc       syscall.RawConn
	num      uint16
	busyPoll time.Duration
	logger   *slog.Logger

	// Receive-side state, used only by the library's receive goroutine.
	rx rxBatch

	full        atomic.Bool
	lastID      atomic.Uint32
	polled      atomic.Uint64 // packets read while busy polling
	releaseOnce sync.Once

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
	q := &Queue{num: o.Queue, busyPoll: o.BusyPoll, logger: o.Logger, raw4: -1, raw6: -1, fatal: make(chan error, 1)}
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
	rc, err := nf.Con.SyscallConn()
	if err != nil {
		nf.Close()
		return nil, fmt.Errorf("netfilter queue socket: %w", err)
	}
	q.rc = rc
	{
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

// Start binds the queue and calls arrive with every packet, in batches,
// from the library's receive goroutine, until Shutdown. drain must release
// every packet the caller holds (see Shutdown); it is also called if the
// receive loop gives up. While busy polling (QueueOptions.BusyPoll) it
// also calls arrive(nil) between reads that found nothing: the caller
// releases then what has fallen due. A bind failure (queue taken by
// another process, no CAP_NET_ADMIN) is returned.
func (q *Queue) Start(arrive func([]Packet), drain func()) error {
	ctx, cancel := context.WithCancel(context.Background())
	q.cancel = cancel
	// The library reads one message at a time (two recvmsg calls and a
	// fresh buffer each). Its callback hands that packet on together with
	// whatever else is already waiting on the socket, read with recvmmsg,
	// so that under load packets are decided and answered in batches.
	fn := func(a nfqueue.Attribute) int {
		if a.PacketID == nil {
			return 0
		}
		q.errRun.Store(0)
		id := *a.PacketID
		var data []byte
		if a.Payload != nil {
			data = *a.Payload
		}
		n := len(data)
		if a.CapLen != nil && int(*a.CapLen) > n {
			n = int(*a.CapLen)
		}
		q.rx.pkts = append(q.rx.pkts[:0], Packet{ID: id, Len: n, Data: data})
		for budget := 0; budget < maxDrainPerWakeup; {
			got, _ := q.drainArrive(arrive)
			if got < len(q.rx.hdrs) {
				break // the socket is empty
			}
			budget += got
		}
		if q.busyPoll > 0 {
			q.poll(ctx, arrive)
		}
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
			// The library unbinds the queue when this returns 1, and the
			// kernel drops what is still queued then: release it first.
			q.release(drain)
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

// drainArrive reads what is waiting on the socket (see drain) and hands
// it, with the packets already in q.rx.pkts, to arrive. It returns how
// many datagrams it read and how many packets it handed over.
func (q *Queue) drainArrive(arrive func([]Packet)) (datagrams, packets int) {
	got, err := q.drain()
	if err != nil && !errors.Is(err, unix.EAGAIN) {
		q.logger.Debug("draining the queue socket", "err", err)
	}
	n := len(q.rx.pkts)
	if n > 0 {
		q.lastID.Store(q.rx.pkts[len(q.rx.pkts)-1].ID)
		arrive(q.rx.pkts)
		q.rx.pkts = q.rx.pkts[:0]
	}
	return got, n
}

// poll busy-polls the socket until q.busyPoll has passed without a packet
// (or the queue stops), handing what it reads to arrive, and calling
// arrive(nil) between reads: with GOMAXPROCS=1 the scheduler goroutine
// would not run until the Go runtime preempted this loop (up to 10 ms),
// so held packets that fall due are released from here (see
// Emulator.ArriveBatch).
func (q *Queue) poll(ctx context.Context, arrive func([]Packet)) {
	deadline := time.Now().Add(q.busyPoll)
	for now := time.Now(); now.Before(deadline) && ctx.Err() == nil; now = time.Now() {
		if _, n := q.drainArrive(arrive); n > 0 {
			q.polled.Add(uint64(n))
			deadline = now.Add(q.busyPoll)
		} else {
			arrive(nil)
			runtime.Gosched()
		}
	}
}

// BusyPolled returns how many packets were read while busy polling (each
// without a wake-up of its own).
func (q *Queue) BusyPolled() uint64 { return q.polled.Load() }

// Fatal delivers an error if the receive loop gave up.
func (q *Queue) Fatal() <-chan error { return q.fatal }

// Verdicts implements Backend: the verdicts go to the kernel as
// consecutive NFQNL_MSG_VERDICT messages in as few sendmsg calls as
// possible (nfnetlink processes every message of a datagram).
func (q *Queue) Verdicts(vs []Verdict) error {
	bp := verdictBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	var errs []error
	for i := range vs {
		buf = appendVerdict(buf, q.num, &vs[i])
		if len(buf) >= maxVerdictDatagram || i == len(vs)-1 {
			if err := q.send(buf); err != nil {
				errs = append(errs, err)
			}
			buf = buf[:0]
		}
	}
	*bp = buf
	verdictBufs.Put(bp)
	return errors.Join(errs...)
}

// maxVerdictDatagram is the size past which a batch of verdicts is sent
// (the kernel accepts up to the socket's send buffer per datagram).
const maxVerdictDatagram = 64 << 10

var verdictBufs = sync.Pool{New: func() any { b := make([]byte, 0, maxVerdictDatagram+FullCopyRange+256); return &b }}

// appendVerdict appends one NFQNL_MSG_VERDICT netlink message: nlmsghdr,
// nfgenmsg, NFQA_VERDICT_HDR {verdict, id} and, for a modified packet,
// NFQA_PAYLOAD.
func appendVerdict(b []byte, queue uint16, v *Verdict) []byte {
	verdict := uint32(nfqueue.NfAccept)
	if v.Drop {
		verdict = nfqueue.NfDrop
	}
	var payload []byte
	if v.Data != nil && !v.Drop {
		payload = v.Data
	}
	return appendVerdictMsg(b, queue, nfqnlMsgVerdict, verdict, v.ID, payload)
}

// appendVerdictMsg appends a verdict message of type typ (NFQNL_MSG_VERDICT
// or NFQNL_MSG_VERDICT_BATCH, for which id is the highest id it covers),
// with NFQA_PAYLOAD when payload is not nil.
func appendVerdictMsg(b []byte, queue uint16, typ uint16, verdict, id uint32, payload []byte) []byte {
	start := len(b)
	// nlmsghdr: len (filled below), type, flags, seq, pid.
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = binary.NativeEndian.AppendUint16(b, nfnlSubsysQueue<<8|typ)
	b = binary.NativeEndian.AppendUint16(b, unix.NLM_F_REQUEST)
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = binary.NativeEndian.AppendUint32(b, 0)
	// nfgenmsg
	b = append(b, unix.AF_UNSPEC, unix.NFNETLINK_V0)
	b = binary.BigEndian.AppendUint16(b, queue)
	// NFQA_VERDICT_HDR
	b = binary.NativeEndian.AppendUint16(b, 4+8)
	b = binary.NativeEndian.AppendUint16(b, nfqaVerdictHdr)
	b = binary.BigEndian.AppendUint32(b, verdict)
	b = binary.BigEndian.AppendUint32(b, id)
	if payload != nil {
		b = binary.NativeEndian.AppendUint16(b, uint16(4+len(payload)))
		b = binary.NativeEndian.AppendUint16(b, nfqaPayload)
		b = append(b, payload...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	binary.NativeEndian.PutUint32(b[start:], uint32(len(b)-start))
	return b
}

// AcceptUpTo implements BatchAccepter: one NFQNL_MSG_VERDICT_BATCH message
// accepts every packet still in the kernel queue with an id up to and
// including id (the kernel walks its queue once, under one lock, instead
// of once per verdict message).
func (q *Queue) AcceptUpTo(id uint32) error {
	var buf [32]byte
	return q.send(appendVerdictMsg(buf[:0], q.num, nfqnlMsgVerdictBat, nfqueue.NfAccept, id, nil))
}

// send writes one datagram to the kernel on the queue's socket.
func (q *Queue) send(b []byte) error {
	var serr error
	err := q.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	return serr
}

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
// kernel queue, including ones linkem has not read yet (the kernel numbers
// a queue's packets from 1 up, and a batch verdict covers every id up to
// the one given).
func (q *Queue) acceptAll() error {
	return q.nf.SetVerdictBatch(q.lastID.Load()+KernelQueueMaxLen+1024, nfqueue.NfAccept)
}

// release makes the kernel stop queueing (new packets pass at once:
// fail-open with a queue length of 0), lets drain release what the caller
// holds, and accepts whatever is left in the kernel queue. It runs once.
func (q *Queue) release(drain func()) []error {
	var errs []error
	q.releaseOnce.Do(func() {
		if err := q.failOpen(); err != nil {
			errs = append(errs, fmt.Errorf("setting fail-open: %w", err))
		}
		if drain != nil {
			drain()
		}
		if err := q.acceptAll(); err != nil {
			errs = append(errs, fmt.Errorf("accepting queued packets: %w", err))
		}
	})
	return errs
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
		errs = append(errs, q.release(drain)...)
		q.cancel()
	} else if drain != nil {
		drain()
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

// Batch receiving.
const (
	rxSlots           = 64
	rxSmallBuf        = 2048
	rxFullBuf         = FullCopyRange + 1024
	maxDrainPerWakeup = 1024
)

type mmsghdr struct {
	Hdr unix.Msghdr
	Len uint32
}

type rxBatch struct {
	bufSize int
	bufs    [][]byte
	iovs    []unix.Iovec
	hdrs    []mmsghdr
	pkts    []Packet
}

func (r *rxBatch) setup(size int) {
	r.bufSize = size
	r.bufs = make([][]byte, rxSlots)
	r.iovs = make([]unix.Iovec, rxSlots)
	r.hdrs = make([]mmsghdr, rxSlots)
	for i := range r.bufs {
		r.bufs[i] = make([]byte, size)
		r.iovs[i].Base = &r.bufs[i][0]
		r.iovs[i].SetLen(size)
		r.hdrs[i].Hdr.Iov = &r.iovs[i]
		r.hdrs[i].Hdr.SetIovlen(1)
	}
}

// drain reads the messages already waiting on the socket, up to rxSlots,
// with one non-blocking recvmmsg, and appends their packets to q.rx.pkts.
// It returns how many datagrams it read.
func (q *Queue) drain() (int, error) {
	r := &q.rx
	want := rxSmallBuf
	if q.full.Load() {
		want = rxFullBuf
	}
	if r.bufSize < want {
		r.setup(want)
	}
	for i := range r.hdrs {
		r.hdrs[i].Len = 0
		r.hdrs[i].Hdr.Flags = 0
	}
	var n int
	var errno syscall.Errno
	err := q.rc.Read(func(fd uintptr) bool {
		r1, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(len(r.hdrs)),
			unix.MSG_DONTWAIT, 0, 0)
		n, errno = int(r1), e
		return true // never wait: the library waits for the next message
	})
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, errno
	}
	for i := 0; i < n; i++ {
		h := &r.hdrs[i]
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			q.logger.Warn("netfilter queue message truncated", "len", h.Len, "buffer", r.bufSize)
		}
		r.pkts = q.parseMessages(r.bufs[i][:min(int(h.Len), r.bufSize)], r.pkts)
	}
	return n, nil
}

// parseMessages appends the packets of the netlink messages in b to out.
func (q *Queue) parseMessages(b []byte, out []Packet) []Packet {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		typ := binary.NativeEndian.Uint16(b[4:6])
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return out
		}
		msg := b[unix.NLMSG_HDRLEN:l]
		switch typ {
		case nfnlSubsysQueue<<8 | nfqnlMsgPacket:
			if p, ok := parsePacket(msg); ok {
				out = append(out, p)
			}
		case unix.NLMSG_ERROR:
			if len(msg) >= 4 {
				if code := int32(binary.NativeEndian.Uint32(msg[0:4])); code != 0 {
					q.logger.Debug("netfilter queue error message", "errno", syscall.Errno(-code))
				}
			}
		}
		l = (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if l > len(b) {
			return out
		}
		b = b[l:]
	}
	return out
}

// parsePacket reads an NFQNL_MSG_PACKET body (nfgenmsg and attributes).
func parsePacket(msg []byte) (Packet, bool) {
	if len(msg) < 4 {
		return Packet{}, false
	}
	attrs := msg[4:]
	var p Packet
	haveID := false
	capLen := 0
	for len(attrs) >= 4 {
		alen := int(binary.NativeEndian.Uint16(attrs[0:2]))
		atyp := binary.NativeEndian.Uint16(attrs[2:4]) & 0x3fff
		if alen < 4 || alen > len(attrs) {
			break
		}
		val := attrs[4:alen]
		switch atyp {
		case nfqaPacketHdr:
			if len(val) >= 4 {
				p.ID = binary.BigEndian.Uint32(val[0:4])
				haveID = true
			}
		case nfqaPayload:
			p.Data = val
		case nfqaCapLen:
			if len(val) >= 4 {
				capLen = int(binary.BigEndian.Uint32(val[0:4]))
			}
		}
		alen = (alen + 3) &^ 3
		if alen > len(attrs) {
			break
		}
		attrs = attrs[alen:]
	}
	p.Len = len(p.Data)
	if capLen > p.Len {
		p.Len = capLen
	}
	return p, haveID
}
