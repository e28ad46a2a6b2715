package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
	"testing/iotest"
)

func frame(p []byte) []byte {
	b, err := AppendFrame(nil, p)
	if err != nil {
		panic(err)
	}
	return b
}

func TestDecoder(t *testing.T) {
	two := append(frame([]byte("hello")), frame(nil)...)
	for _, tc := range []struct {
		name string
		in   []byte
		want []string
		err  error
	}{
		{"two frames", two, []string{"hello", ""}, io.EOF},
		{"empty stream", nil, nil, io.EOF},
		{"short prefix", []byte{0, 0}, nil, io.ErrUnexpectedEOF},
		{"short body", []byte{0, 0, 0, 9, 'a'}, nil, io.ErrUnexpectedEOF},
		{"prefix over the cap", []byte{0xff, 0xff, 0xff, 0xff}, nil, ErrFrameTooLarge},
		{"prefix at the cap, no body", binary.BigEndian.AppendUint32(nil, MaxFrame), nil, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range map[string]io.Reader{"whole": bytes.NewReader(tc.in), "one byte": iotest.OneByteReader(bytes.NewReader(tc.in))} {
				var d Decoder
				var got []string
				var err error
				for {
					var m []byte
					if m, err = d.Next(r, nil); err != nil {
						break
					}
					got = append(got, string(m))
				}
				if !errors.Is(err, tc.err) {
					t.Errorf("err = %v, want %v", err, tc.err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("frame %d = %q, want %q", i, got[i], tc.want[i])
					}
				}
			}
		})
	}
}

// stutter returns a deadline error after every byte, as a read interrupted
// by SetDeadline would.
type stutter struct {
	r    io.Reader
	odd  bool
	errs int
}

func (s *stutter) Read(b []byte) (int, error) {
	s.odd = !s.odd
	if s.odd {
		s.errs++
		return 0, os.ErrDeadlineExceeded
	}
	return s.r.Read(b[:min(1, len(b))])
}

func TestDecoderResumesAfterDeadline(t *testing.T) {
	in := append(frame(bytes.Repeat([]byte("ab"), 100)), frame([]byte("z"))...)
	s := &stutter{r: bytes.NewReader(in)}
	var d Decoder
	var got [][]byte
	for len(got) < 2 && s.errs < 10000 {
		m, err := d.Next(s, nil)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			continue
		}
		got = append(got, m)
	}
	if len(got) != 2 || len(got[0]) != 200 || string(got[1]) != "z" {
		t.Fatalf("got %d frames", len(got))
	}
}

func TestAppendFrameCap(t *testing.T) {
	if _, err := AppendFrame(nil, make([]byte, MaxFrame+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("err = %v", err)
	}
}

// FuzzFrame feeds arbitrary bytes to the decoder: every outcome is frames
// then an error, never a panic, and the buffers stay within what arrived
// (plus one growth step) however large the prefix claims to be.
func FuzzFrame(f *testing.F) {
	f.Add(frame([]byte("hello")))
	f.Add(append(frame(nil), frame([]byte{1, 2, 3})...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add(binary.BigEndian.AppendUint32(nil, MaxFrame))
	f.Fuzz(func(t *testing.T, in []byte) {
		var d Decoder
		r := bytes.NewReader(in)
		total := 0
		for i := 0; ; i++ {
			m, err := d.Next(r, nil)
			if err != nil {
				if cap(d.body) > len(in)+growStep {
					t.Fatalf("buffer of %d bytes for %d input bytes", cap(d.body), len(in))
				}
				return
			}
			total += FrameHeader + len(m)
			if total > len(in) || i > len(in) {
				t.Fatalf("decoded %d bytes from %d", total, len(in))
			}
		}
	})
}
