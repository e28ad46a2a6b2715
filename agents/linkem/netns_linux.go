package linkem

import "protolab/agents/internal/netns"

// InNetNS runs fn on an OS thread of its own that is switched into the
// network namespace at path (/run/netns/NAME, /proc/PID/ns/net, ...), and
// switched back before the thread is given back to the Go scheduler.
// Sockets fn creates stay in that namespace. With path "" fn runs as is.
func InNetNS(path string, fn func() error) error { return netns.Run(path, fn) }
