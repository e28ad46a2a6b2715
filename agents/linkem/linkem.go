package linkem

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// StartOptions configure Start.
type StartOptions struct {
	Queue uint16
	Name  string // metrics label; default "q<queue>"
	Seed  uint64
	NetNS string // network namespace path; "" = the process's own
	// BusyPoll: see QueueOptions.BusyPoll (0: wait in the netpoller).
	BusyPoll time.Duration
	Logger   *slog.Logger
}

// Linkem is a running emulator bound to a netfilter queue.
type Linkem struct {
	Emulator *Emulator
	Queue    *Queue
	timer    *TimerFD
	logger   *slog.Logger

	schedDone chan struct{}
	stopOnce  sync.Once
	released  int
	stopErr   error
}

// Start opens and binds the queue and starts emulating cfg.
func Start(cfg Config, o StartOptions) (*Linkem, error) {
	if o.Logger == nil {
		o.Logger = discardLogger()
	}
	if o.Name == "" {
		o.Name = fmt.Sprintf("q%d", o.Queue)
	}
	cfg = cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q, err := OpenQueue(QueueOptions{Queue: o.Queue, NetNS: o.NetNS, BusyPoll: o.BusyPoll, FullCopy: cfg.needsPayload(), Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	timer, err := NewTimerFD()
	if err != nil {
		q.Shutdown(nil)
		return nil, err
	}
	emu, err := NewEmulator(cfg, Options{Name: o.Name, Seed: o.Seed, Backend: q, Timer: timer, Logger: o.Logger})
	if err != nil {
		timer.Close()
		q.Shutdown(nil)
		return nil, err
	}
	l := &Linkem{Emulator: emu, Queue: q, timer: timer, logger: o.Logger, schedDone: make(chan struct{})}
	go func() {
		defer close(l.schedDone)
		_ = emu.Run()
	}()
	if err := q.Start(emu.ArriveBatch, func() { emu.Drain() }); err != nil {
		timer.Close()
		<-l.schedDone
		q.Shutdown(nil)
		return nil, err
	}
	return l, nil
}

// Fatal delivers an error if the queue stopped working on its own.
func (l *Linkem) Fatal() <-chan error { return l.Queue.Fatal() }

// Stop releases every held packet at once, accepts whatever is still
// queued in the kernel, unbinds the queue and stops the scheduler. It
// returns how many held packets were released. Safe to call more than
// once.
func (l *Linkem) Stop() (int, error) {
	l.stopOnce.Do(func() {
		l.Emulator.SetClosing()
		err := l.Queue.Shutdown(func() { l.released = l.Emulator.Drain() })
		l.timer.Close()
		<-l.schedDone
		l.stopErr = err
		if err != nil {
			l.logger.Warn("stopping the queue", "err", err)
		}
	})
	return l.released, l.stopErr
}
