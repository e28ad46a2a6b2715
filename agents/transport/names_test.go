package transport

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// names.txt lists the registered transports for protolab's Python side (its
// spec validation offers them before any agent runs); this keeps the two equal.
func TestRegisteredNamesAreNamesTxt(t *testing.T) {
	b, err := os.ReadFile("names.txt")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			listed = append(listed, line)
		}
	}
	slices.Sort(listed)
	if got := Names(); !slices.Equal(got, listed) {
		t.Errorf("registered %v, names.txt %v: add or remove the name in names.txt and in protolab/workloads/spims.py's TRANSPORTS", got, listed)
	}
}
