package transport

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// KnobError is a knob that is unknown or whose value does not parse.
type KnobError struct{ msg string }

func (e *KnobError) Error() string { return e.msg }

func knobErr(format string, a ...any) error { return &KnobError{fmt.Sprintf(format, a...)} }

// CheckKnobs rejects names t does not have and values that do not parse
// as their kind.
func CheckKnobs(t Transport, m map[string]string) error {
	k, err := parseKnobs(t.Name(), t.Knobs(), m)
	if err != nil {
		return err
	}
	for _, kn := range t.Knobs() {
		switch kn.Kind {
		case KnobDuration:
			_, err = k.duration(kn.Name)
		case KnobCount:
			_, err = k.int(kn.Name)
		case KnobBool:
			_, err = k.bool(kn.Name)
		case KnobDSCP:
			_, _, err = k.dscp()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// knobs is one transport's parsed Options.Knobs, defaults filled in.
type knobs struct {
	transport string
	values    map[string]string
}

// parseKnobs checks m against the transport's knobs; an unknown name is an
// error listing the known ones.
func parseKnobs(name string, known []Knob, m map[string]string) (knobs, error) {
	k := knobs{transport: name, values: map[string]string{}}
	names := make([]string, 0, len(known))
	for _, kn := range known {
		names = append(names, kn.Name)
		if kn.Default != "" {
			k.values[kn.Name] = kn.Default
		}
	}
	sort.Strings(names)
	for key, v := range m {
		ok := false
		for _, kn := range known {
			ok = ok || kn.Name == key
		}
		if !ok {
			return k, knobErr("%s: unknown knob %q (known: %s)", name, key, strings.Join(names, ", "))
		}
		k.values[key] = v
	}
	return k, nil
}

func (k knobs) has(name string) bool { _, ok := k.values[name]; return ok }

func (k knobs) duration(name string) (time.Duration, error) {
	v, ok := k.values[name]
	if !ok {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, knobErr("%s: knob %s=%q: want a duration >= 0 with its unit, e.g. 200ms", k.transport, name, v)
	}
	return d, nil
}

func (k knobs) int(name string) (int, error) {
	v, ok := k.values[name]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, knobErr("%s: knob %s=%q: want an integer >= 0", k.transport, name, v)
	}
	return n, nil
}

func (k knobs) bool(name string) (bool, error) {
	v, ok := k.values[name]
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, knobErr("%s: knob %s=%q: want true or false", k.transport, name, v)
	}
	return b, nil
}

func (k knobs) string(name string) string { return k.values[name] }

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
