package linkem

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// ControlSocketMode is the mode of the control socket: only its owner may
// connect, and so reconfigure the link.
const ControlSocketMode fs.FileMode = 0o600

// ListenControl creates the unix socket at path for linkem's control API
// (PUT /config), mode 0600, owned by the process's user. Nothing may exist
// at path yet. Its Accept also refuses peers of another user (SO_PEERCRED;
// root excepted), should the mode ever be loosened. Closing the listener
// removes the socket.
func ListenControl(path string, logger *slog.Logger) (net.Listener, error) {
	if logger == nil {
		logger = discardLogger()
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("control socket %s: something exists there already (a linkem still running, or a stale socket to remove)", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	// The umask makes bind(2) create the socket with mode 0600, so it is
	// never connectable by others, not even between bind and chmod. The
	// umask is the process's: this runs once, at start.
	old := unix.Umask(0o177)
	ln, err := net.Listen("unix", path)
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, ControlSocketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return &ownerListener{UnixListener: ln.(*net.UnixListener), uid: uint32(os.Geteuid()), logger: logger}, nil
}

// ownerListener accepts connections from its own user and root only.
type ownerListener struct {
	*net.UnixListener
	uid    uint32
	logger *slog.Logger
}

func (l *ownerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && (uid == l.uid || uid == 0) {
			return c, nil
		}
		l.logger.Warn("control socket: connection refused", "peer_uid", uid, "err", err)
		c.Close()
	}
}

// peerUID is the user id of the process at the other end of c.
func peerUID(c *net.UnixConn) (uint32, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := rc.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return cred.Uid, nil
}
