package dishost

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// WorkLoop is the thesis's CPU meter (sec. 3.2): a loop of floating-point
// operations whose throughput drops by the share of the CPU that something
// else (here: networking) takes.
type WorkLoop struct {
	iters   atomic.Uint64
	cpuNano atomic.Int64 // CPU time of the loop's own thread, updated every ~1024 chunks
	sink    float64
}

// workChunk is one unit of work: a few hundred floating operations
// (about 1 us on a current core), so the counter is updated rarely.
func workChunk(x float64) float64 {
	for i := 0; i < 256; i++ {
		x = x*1.0000001 + 0.5
		x = x / 1.0000002
	}
	return x
}

// Run spins until ctx ends, counting chunks. It locks its OS thread, gives
// the Go scheduler one more P for it (with GOMAXPROCS 1 the receiving
// goroutine would run only when the runtime preempts the loop), and lowers
// that thread to nice 19, so the kernel runs the receiver on every wake-up,
// as the workstations' schedulers favoured an I/O-bound process over a
// CPU-bound one.
func (w *WorkLoop) Run(ctx context.Context) {
	prev := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(prev + 1)
	defer runtime.GOMAXPROCS(prev)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19) // best effort: the loop still counts without it
	x := 1.0
	for k := 0; ctx.Err() == nil; k++ {
		for i := 0; i < 64; i++ {
			x = workChunk(x)
		}
		w.iters.Add(64)
		if k%16 == 0 {
			w.cpuNano.Store(threadCPU())
		}
	}
	w.cpuNano.Store(threadCPU())
	w.sink = x
}

// ThreadCPU is the CPU time the loop's thread has used (as last sampled).
func (w *WorkLoop) ThreadCPU() time.Duration { return time.Duration(w.cpuNano.Load()) }

func threadCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Iterations is the number of chunks done so far.
func (w *WorkLoop) Iterations() uint64 { return w.iters.Load() }

// Rate measures chunks per second over d.
func (w *WorkLoop) Rate(ctx context.Context, d time.Duration) float64 {
	a, t0 := w.Iterations(), time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return float64(w.Iterations()-a) / time.Since(t0).Seconds()
}
