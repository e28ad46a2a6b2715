package cli

import (
	"errors"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	usage := Usagef("--x %d: want > 0", -1)
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("failed"), 1},
		{usage, 2},
		{fmt.Errorf("wrapped: %w", usage), 2},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if usage.Error() != "--x -1: want > 0" {
		t.Errorf("message %q", usage.Error())
	}
}
