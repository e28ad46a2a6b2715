// Package bench measures what linkem costs with no impairment configured:
// the delay it adds and the packets per second it forwards, in two
// throw-away network namespaces joined by a veth pair, with linkem as a
// pinned child process (protolab-linkem bench). Linux only; needs root.
package bench
