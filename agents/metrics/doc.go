// Package metrics is the Prometheus side of every protolab agent.
//
// Each container of the lab runs protolab-agent as PID 1. Its job is to
// answer one question for the experiment dashboards: how much CPU did this
// node burn, and how much traffic crossed its data-plane links? The package
// answers it with a small, fixed set of metrics and nothing else (no Go
// runtime or process metrics), so a scrape stays a few hundred bytes even
// when the lab runs hundreds of nodes.
//
// # Collectors
//
// The design follows node_exporter. A [Collector] is anything with an
// Update method that sends metrics on a channel. Collectors live one per
// file and add themselves to a package-level table from init() through
// [Register], keyed by a short name:
//
//   - "cgroup_cpu": the container's own cgroup CPU time, quota and
//     throttling, from cgroup v1 (cpuacct.usage, cpu.cfs_quota_us, ...) or
//     cgroup v2 (cpu.stat, cpu.max), detected at every scrape.
//   - "netdev": per-interface byte, packet, drop and error counters from
//     /proc/net/dev (parsed by github.com/prometheus/procfs), leaving out lo
//     and the management interfaces given in [Config.MgmtInterfaces].
//   - "build_info": protolab_agent_build_info{version,revision,goversion} 1.
//
// [New] builds a [Set] from the table (or from the names asked for). The Set
// is a single prometheus.Collector that runs every member on each scrape,
// concurrently, and adds protolab_scrape_collector_success{collector} and
// protolab_scrape_collector_duration_seconds{collector} for each of them.
// A member that fails (a missing cgroup file, an unreadable /proc/net/dev,
// even a panic in a parser) reports success 0, has its error logged once
// for that scrape, and never takes the agent down.
//
// Nothing is cached between scrapes: the lab wires data-plane veths into a
// container after the agent has started, and they show up on the next
// scrape.
//
// # Serving
//
// [NewRegistry] wraps a Set in a fresh prometheus.Registry, [NewHandler]
// serves it on /metrics next to a /healthz that answers 200 "ok", and
// [ListenAndServe] runs the HTTP server until its context ends, then shuts
// it down gracefully.
//
// # Growing
//
// Other agents of this module (the DIS host, the link emulator, ...) import
// this package to get the same /metrics endpoint. A stateless collector
// registers a factory in its own package's init():
//
//	func init() { metrics.Register("dis_pdu", newPDUCollector) }
//
// A collector bound to a running object (a socket, a queue) is added to a
// Set after the fact with [Set.Add]. Either way it is wrapped with the same
// success and duration metrics. Metric names start with "protolab_", use
// base units (seconds, bytes) and end counters in "_total".
package metrics
