package spims

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Where data units come from and where they go, SPIMS Appendix B's
//
//	<source>      ::= "<" access
//	<destination> ::= ">" access
//	access        ::= FILE name | MEMORY | VIRTUAL MEMORY
//
// as a job's source_data and destination_data.

// Data access kinds.
const (
	AccessMemory        = "memory"         // one buffer, reused
	AccessVirtualMemory = "virtual_memory" // fresh pages per unit, mapped, touched, unmapped
	AccessFile          = "file"           // read from / appended to a file
)

// DataSpec is a job's source_data or destination_data. The zero value is
// memory.
type DataSpec struct {
	Access string `json:"access"`
	Path   string `json:"path,omitempty"` // file: absolute
}

func (d DataSpec) String() string {
	switch d.Access {
	case "":
		return AccessMemory
	case AccessFile:
		return AccessFile + " " + d.Path
	}
	return d.Access
}

// orMemory is d, memory when unset.
func (d DataSpec) orMemory() DataSpec {
	if d.Access == "" {
		d.Access = AccessMemory
	}
	return d
}

// check validates d's form; what names it in errors ("source_data").
func (d DataSpec) check(what string) error {
	switch d.Access {
	case AccessMemory, AccessVirtualMemory:
		if d.Path != "" {
			return fmt.Errorf("%s: path is for access file, not %s", what, d.Access)
		}
	case AccessFile:
		if d.Path == "" {
			return fmt.Errorf("%s: access file needs a path", what)
		}
		if !filepath.IsAbs(d.Path) {
			return fmt.Errorf("%s: path %q is relative; give it absolute", what, d.Path)
		}
	case "":
		return fmt.Errorf("%s: access missing: memory, virtual_memory or file", what)
	default:
		return fmt.Errorf("%s: access %q: memory, virtual_memory or file", what, d.Access)
	}
	return nil
}

// source hands out the messages that carry data units: a header, then
// payload bytes from where the data comes from.
type source interface {
	// msg returns a message of header h and n payload bytes, valid until
	// release.
	msg(h header, n int) ([]byte, error)
	// release is called once the message is sent.
	release()
	Close() error
}

// openSource opens d for reading; a file that is missing or empty is an
// error here.
func openSource(d DataSpec) (source, error) {
	switch d.Access {
	case "", AccessMemory:
		return &memSource{}, nil
	case AccessVirtualMemory:
		return &vmSource{}, nil
	case AccessFile:
		return openFileSource(d.Path)
	}
	return nil, d.check("source_data")
}

// memSource is MEMORY: one buffer whose payload is never written (zeros),
// so a unit costs its header.
type memSource struct{ buf []byte }

func (s *memSource) msg(h header, n int) ([]byte, error) {
	s.buf = grown(s.buf, Header+n)
	m := s.buf[:Header+n]
	putHeader(m, h)
	return m, nil
}

func (s *memSource) release()     {}
func (s *memSource) Close() error { return nil }

// vmSource is VIRTUAL MEMORY: each message in pages mapped for it alone,
// written once per page (so the page faults are part of the cost) and
// unmapped when sent.
type vmSource struct{ cur []byte }

func (s *vmSource) msg(h header, n int) ([]byte, error) {
	m, err := mapPages(Header + n)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(m); i += pageSize {
		m[i] = 0
	}
	putHeader(m, h)
	s.cur = m
	return m, nil
}

func (s *vmSource) release() {
	if s.cur != nil {
		unix.Munmap(s.cur)
		s.cur = nil
	}
}

func (s *vmSource) Close() error { s.release(); return nil }

var pageSize = os.Getpagesize()

// mapPages maps n bytes of fresh anonymous memory.
func mapPages(n int) ([]byte, error) {
	m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("virtual_memory: mmap %d bytes: %w", n, err)
	}
	return m, nil
}

// fileSource is FILE: each payload read from the file where the last one
// ended, from the start again at its end.
type fileSource struct {
	f    *os.File
	path string
	buf  []byte
}

func openFileSource(path string) (*fileSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	switch {
	case err != nil:
	case st.IsDir():
		err = fmt.Errorf("%s is a directory", path)
	case st.Mode().IsRegular() && st.Size() == 0:
		err = fmt.Errorf("%s is empty", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileSource{f: f, path: path}, nil
}

func (s *fileSource) msg(h header, n int) ([]byte, error) {
	s.buf = grown(s.buf, Header+n)
	m := s.buf[:Header+n]
	putHeader(m, h)
	if err := s.fill(m[Header:]); err != nil {
		return nil, err
	}
	return m, nil
}

// fill reads len(p) bytes, going back to the start at the end of the file.
func (s *fileSource) fill(p []byte) error {
	rewound := false
	for len(p) > 0 {
		k, err := s.f.Read(p)
		p = p[k:]
		if k > 0 {
			rewound = false
		}
		switch {
		case err == io.EOF || (err == nil && k == 0):
			if rewound {
				return fmt.Errorf("%s: nothing to read from the start", s.path)
			}
			if _, err := s.f.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("%s: back to the start: %w", s.path, err)
			}
			rewound = true
		case err != nil:
			return fmt.Errorf("reading %s: %w", s.path, err)
		}
	}
	return nil
}

func (s *fileSource) release()     {}
func (s *fileSource) Close() error { return s.f.Close() }

// sink takes the messages a receiver reads.
type sink interface {
	// buf is where the next message, of n payload bytes, is read to.
	buf(n int) ([]byte, error)
	// put stores the payload of message m, just read, and frees buf's.
	put(m []byte) error
	Close() error
}

// openSink opens d for writing; a file is created or truncated.
func openSink(d DataSpec) (sink, error) {
	switch d.Access {
	case "", AccessMemory:
		return &memSink{}, nil
	case AccessVirtualMemory:
		return &vmSink{}, nil
	case AccessFile:
		f, err := os.OpenFile(d.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("destination_data: %w", err)
		}
		return &fileSink{f: f}, nil
	}
	return nil, d.check("destination_data")
}

// checkDestination says whether a destination file could be created: its
// directory exists and it is not a directory itself.
func checkDestination(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	st, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Dir(path))
	}
	return nil
}

// memSink is MEMORY: every message read into one buffer.
type memSink struct{ b []byte }

func (s *memSink) buf(int) ([]byte, error) { return s.b, nil }

func (s *memSink) put(m []byte) error {
	if cap(m) > cap(s.b) {
		s.b = m
	}
	return nil
}

func (s *memSink) Close() error { return nil }

// vmSink is VIRTUAL MEMORY: each message read into pages mapped for it
// alone (the copy from the socket faults them in), unmapped once read.
// After a failed read the pages stay mapped: the transport's reader may
// still hold them for the rest of the message.
type vmSink struct{ cur []byte }

func (s *vmSink) buf(n int) ([]byte, error) {
	m, err := mapPages(Header + n)
	if err != nil {
		return nil, err
	}
	s.cur = m
	return m[:0], nil
}

func (s *vmSink) put([]byte) error {
	if s.cur == nil {
		return errors.New("virtual_memory: no buffer out")
	}
	err := unix.Munmap(s.cur)
	s.cur = nil
	return err
}

func (s *vmSink) Close() error { return nil }

// fileSink is FILE: each payload written (appended) to the file as it
// arrives; write(2) into the page cache, no fsync.
type fileSink struct {
	f *os.File
	b []byte
}

func (s *fileSink) buf(int) ([]byte, error) { return s.b, nil }

func (s *fileSink) put(m []byte) error {
	if cap(m) > cap(s.b) {
		s.b = m
	}
	if _, err := s.f.Write(m[Header:]); err != nil {
		return fmt.Errorf("destination_data: %w", err)
	}
	return nil
}

func (s *fileSink) Close() error { return s.f.Close() }
