package linkem

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// TimerFD is a Timer on a Linux timerfd read through Go's network poller.
// Go's own timers wake up to a millisecond late (the poller's epoll timeout
// has millisecond resolution); a timerfd expiry is an fd event, delivered
// within microseconds, and waiting for it does not tie up an OS thread.
type TimerFD struct {
	f *os.File
}

// NewTimerFD creates a disarmed timer on CLOCK_MONOTONIC.
func NewTimerFD() (*TimerFD, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	return &TimerFD{f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// Arm makes the timer fire once after d (at once if d <= 0), replacing any
// earlier arming.
func (t *TimerFD) Arm(d time.Duration) {
	if d <= 0 {
		d = 1 // an all-zero it_value would disarm the timer
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	rc, err := t.f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.TimerfdSettime(int(fd), 0, &spec, nil)
	})
}

// Wait blocks until the timer fires or is closed.
func (t *TimerFD) Wait() error {
	var buf [8]byte
	_, err := t.f.Read(buf[:])
	return err
}

// Close wakes a Wait with an error and releases the timer.
func (t *TimerFD) Close() error { return t.f.Close() }
