package asn1c

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate regenerates the codecs with gen.sh into a temporary
// directory and compares them with the committed files.
func TestGeneratedUpToDate(t *testing.T) {
	if _, err := exec.LookPath("asn1c"); err != nil {
		t.Skip("asn1c not on PATH (Debian package asn1c; ansible installs it): cannot regenerate to compare")
	}
	dir := t.TempDir()
	if out, err := exec.Command("sh", "gen.sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, out)
	}
	gen, _ := filepath.Glob(filepath.Join(dir, "*.[ch]"))
	have, _ := filepath.Glob("*.[ch]")
	var committed []string
	for _, f := range have {
		if !strings.HasPrefix(f, "bridge.") {
			committed = append(committed, f)
		}
	}
	if len(gen) != len(committed) {
		t.Errorf("gen.sh makes %d files, %d are committed: run ./gen.sh", len(gen), len(committed))
	}
	for _, g := range gen {
		want, _ := os.ReadFile(g)
		got, err := os.ReadFile(filepath.Base(g))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from gen.sh's output (or is missing): run ./gen.sh", filepath.Base(g))
		}
	}
}
