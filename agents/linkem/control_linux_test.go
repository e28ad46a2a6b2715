package linkem

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The control socket is created 0600 (whatever the umask), refuses a path
// that is taken, accepts its owner, and is removed when closed.
func TestListenControl(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "c.sock")
	ln, err := ListenControl(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("control socket mode %v, want a socket with 0600", fi.Mode())
	}
	if u := syscall.Umask(0); u != 0 {
		t.Errorf("umask %o left behind, want 0 as before", u)
	}
	if _, err := ListenControl(path, nil); err == nil {
		t.Error("a second ListenControl on the same path succeeded")
	}

	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-accepted; err != nil {
		t.Errorf("the owner's connection was not accepted: %v", err)
	}
	ln.Close()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still there after Close: %v", err)
	}
}

// A foreign file at the path is neither replaced nor removed.
func TestListenControlKeepsForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.sock")
	if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenControl(path, nil); err == nil {
		t.Fatal("ListenControl took a path where a file exists")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "mine" {
		t.Errorf("the file was touched: %q, %v", b, err)
	}
}
