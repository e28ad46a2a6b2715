// Package counters reads the machine files the agents measure with: a
// cgroup's CPU counters (v1 cpuacct/cpu or v2 cpu.stat/cpu.max) and the
// per-interface counters of /proc/net/dev.
//
// Files are read on every call and nothing is cached, so counters and
// interfaces that appear later are seen on the next read.
package counters
