// Package cli holds what the agents' commands share when a package runs
// their work: the error that tells a command to exit 2 (a bad flag or
// setting) instead of 1 (the run failed).
package cli

import (
	"errors"
	"fmt"
)

// UsageError is a bad flag or setting found while a run is set up; the
// command prints it and exits 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap gives the error under the usage error.
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef makes a UsageError from a format.
func Usagef(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// ExitCode is a command's exit code for err: 0 for nil, 2 for a
// UsageError, 1 for any other error.
func ExitCode(err error) int {
	var u *UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}
