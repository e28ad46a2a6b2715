package metrics

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace is the prefix of every metric exported by protolab agents.
const Namespace = "protolab"

// Collector is one source of metrics. Update is called on every scrape and
// sends the current values on ch. It returns an error when the source could
// not be read; metrics sent before the error are still exported.
type Collector interface {
	Update(ch chan<- prometheus.Metric) error
}

// Config is what a collector factory may need. The zero value is usable:
// empty paths fall back to the real system locations.
type Config struct {
	// CgroupRoot is where the cgroup filesystem is mounted
	// (default /sys/fs/cgroup). Inside a container this is the
	// container's own cgroup.
	CgroupRoot string
	// ProcPath is where procfs is mounted (default /proc).
	ProcPath string
	// MgmtInterfaces are interface names that are not data plane and are
	// left out of interface metrics. "lo" is always left out.
	MgmtInterfaces []string
	// Version and Revision label protolab_agent_build_info
	// (defaults "dev" and "unknown").
	Version  string
	Revision string
	// Logger receives collector errors (default: discard).
	Logger *slog.Logger
}

// Defaults for Config fields left empty.
const (
	DefaultCgroupRoot = "/sys/fs/cgroup"
	DefaultProcPath   = "/proc"
	DefaultVersion    = "dev"
	DefaultRevision   = "unknown"
)

func (c Config) withDefaults() Config {
	if c.CgroupRoot == "" {
		c.CgroupRoot = DefaultCgroupRoot
	}
	if c.ProcPath == "" {
		c.ProcPath = DefaultProcPath
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	if c.Revision == "" {
		c.Revision = DefaultRevision
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Factory builds a collector from the agent's configuration.
type Factory func(cfg Config) (Collector, error)

var (
	factoriesMu sync.Mutex
	factories   = map[string]Factory{}
)

// Register adds a collector factory under name. It is meant to be called
// from init(); registering the same name twice panics.
func Register(name string, f Factory) {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	if _, dup := factories[name]; dup {
		panic(fmt.Sprintf("metrics: collector %q registered twice", name))
	}
	factories[name] = f
}

// Registered returns the names of all registered collector factories,
// sorted.
func Registered() []string {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var (
	scrapeDurationDesc = prometheus.NewDesc(
		prometheus.BuildFQName(Namespace, "scrape", "collector_duration_seconds"),
		"Time in seconds that a protolab agent collector took to run during this scrape.",
		[]string{"collector"}, nil,
	)
	scrapeSuccessDesc = prometheus.NewDesc(
		prometheus.BuildFQName(Namespace, "scrape", "collector_success"),
		"Whether a protolab agent collector succeeded during this scrape (1) or failed (0).",
		[]string{"collector"}, nil,
	)
)

// Set runs a group of named collectors on each scrape. It implements
// prometheus.Collector.
type Set struct {
	logger *slog.Logger

	mu         sync.RWMutex
	collectors map[string]Collector
}

// New builds a Set from registered factories. With no names it uses every
// registered collector; otherwise exactly the names given, and an unknown
// name is an error.
func New(cfg Config, names ...string) (*Set, error) {
	cfg = cfg.withDefaults()
	if len(names) == 0 {
		names = Registered()
	}
	s := &Set{logger: cfg.Logger, collectors: map[string]Collector{}}
	for _, name := range names {
		factoriesMu.Lock()
		f, ok := factories[name]
		factoriesMu.Unlock()
		if !ok {
			return nil, fmt.Errorf("metrics: unknown collector %q (registered: %s)", name, strings.Join(Registered(), ", "))
		}
		c, err := f(cfg)
		if err != nil {
			return nil, fmt.Errorf("metrics: creating collector %q: %w", name, err)
		}
		if err := s.Add(name, c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add puts a collector built elsewhere (for instance one bound to a running
// simulation) into the Set under name. Names must be unique within a Set.
func (s *Set) Add(name string, c Collector) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.collectors[name]; dup {
		return fmt.Errorf("metrics: collector %q already in set", name)
	}
	s.collectors[name] = c
	return nil
}

// Names returns the names of the collectors in the Set, sorted.
func (s *Set) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.collectors))
	for n := range s.collectors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Describe implements prometheus.Collector. Like node_exporter it only
// describes the scrape meta-metrics; the members' metrics vary with what
// the node has (interfaces come and go), so they are not pre-declared.
func (s *Set) Describe(ch chan<- *prometheus.Desc) {
	ch <- scrapeDurationDesc
	ch <- scrapeSuccessDesc
}

// Collect implements prometheus.Collector: it runs every member
// concurrently and adds the per-collector success and duration metrics.
func (s *Set) Collect(ch chan<- prometheus.Metric) {
	s.mu.RLock()
	members := make(map[string]Collector, len(s.collectors))
	for n, c := range s.collectors {
		members[n] = c
	}
	s.mu.RUnlock()

	var wg sync.WaitGroup
	wg.Add(len(members))
	for name, c := range members {
		go func(name string, c Collector) {
			defer wg.Done()
			s.run(name, c, ch)
		}(name, c)
	}
	wg.Wait()
}

func (s *Set) run(name string, c Collector, ch chan<- prometheus.Metric) {
	start := time.Now()
	err := safeUpdate(c, ch)
	duration := time.Since(start).Seconds()

	success := 1.0
	if err != nil {
		success = 0
		s.logger.Error("collector failed", "collector", name, "duration_seconds", duration, "err", err)
	}
	ch <- prometheus.MustNewConstMetric(scrapeDurationDesc, prometheus.GaugeValue, duration, name)
	ch <- prometheus.MustNewConstMetric(scrapeSuccessDesc, prometheus.GaugeValue, success, name)
}

// safeUpdate turns a panic inside a collector (say, a parser indexing past
// the end of a malformed line) into an error, so one bad file cannot kill
// PID 1 of a lab node.
func safeUpdate(c Collector, ch chan<- prometheus.Metric) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("collector panicked: %v", r)
		}
	}()
	return c.Update(ch)
}

// NewRegistry returns a registry holding only the given Set: no Go runtime
// or process metrics, to keep scrapes small.
func NewRegistry(s *Set) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(s); err != nil {
		return nil, fmt.Errorf("metrics: registering collector set: %w", err)
	}
	return reg, nil
}

// AgentRegistry is the registry a role's agent serves: its build info and
// the one collector c, under name, bound to the agent's run.
func AgentRegistry(cfg Config, name string, c Collector) (*prometheus.Registry, error) {
	s, err := New(cfg, "build_info")
	if err != nil {
		return nil, err
	}
	if err := s.Add(name, c); err != nil {
		return nil, err
	}
	return NewRegistry(s)
}
