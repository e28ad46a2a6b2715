package nicfilter

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/cilium/ebpf/link"
	"github.com/prometheus/client_golang/prometheus"
)

// HostSpec is one host whose NIC filter is modelled: the bridge port toward
// it, a process in its network namespace, its interface there and the
// filter's mode (a name of Modes).
type HostSpec struct {
	Port   string `json:"port"`
	PID    int    `json:"pid"`
	IfName string `json:"ifname"`
	Mode   string `json:"mode"`
}

// host is one running filter.
type host struct {
	spec   HostSpec
	mode   Mode
	nic    *Host
	filter *Filter
	link   link.Link

	refreshing sync.Mutex // one refresh at a time: the poll's and /refresh's
	mu         sync.Mutex
	pollErrors uint64
	lastErr    string
}

func (h *host) close() {
	if h.link != nil {
		h.link.Close()
	}
	if h.filter != nil {
		h.filter.Close()
	}
	if h.nic != nil {
		h.nic.Close()
	}
}

// refresh reads the host's state and programs the filter with it.
func (h *host) refresh() error {
	h.refreshing.Lock()
	defer h.refreshing.Unlock()
	s, err := h.nic.Read(h.mode)
	if err == nil {
		old := h.filter.State()
		if !sameState(old, s) {
			err = h.filter.Set(s)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.pollErrors++
		h.lastErr = err.Error()
	} else {
		h.lastErr = ""
	}
	return err
}

func sameState(a, b State) bool {
	if a.Mode != b.Mode || a.MAC != b.MAC || a.AllMulti != b.AllMulti || a.Promisc != b.Promisc || len(a.Joined) != len(b.Joined) {
		return false
	}
	in := map[[6]byte]bool{}
	for _, x := range a.Joined {
		in[x] = true
	}
	for _, x := range b.Joined {
		if !in[x] {
			return false
		}
	}
	return true
}

type hostStats struct {
	Port       string           `json:"port"`
	PID        int              `json:"pid"`
	IfName     string           `json:"ifname"`
	Mode       string           `json:"mode"`
	MAC        string           `json:"mac"`
	AllMulti   bool             `json:"allmulti"`
	Promisc    bool             `json:"promisc"`
	Joined     []string         `json:"joined"`
	Mask       string           `json:"mask"`
	Counters   map[string]Count `json:"counters"`
	PollErrors uint64           `json:"poll_errors"`
	LastError  string           `json:"last_error,omitempty"`
}

func (h *host) stats() (hostStats, error) {
	s := h.filter.State()
	c, err := h.filter.Counters()
	st := hostStats{Port: h.spec.Port, PID: h.spec.PID, IfName: h.spec.IfName, Mode: h.mode.String(),
		MAC: net.HardwareAddr(s.MAC[:]).String(), AllMulti: s.AllMulti, Promisc: s.Promisc,
		Joined: []string{}, Mask: fmt.Sprintf("%#016x", Mask(s.Joined)), Counters: map[string]Count{}}
	for _, a := range s.Joined {
		st.Joined = append(st.Joined, net.HardwareAddr(a[:]).String())
	}
	for v, n := range c {
		st.Counters[Verdict(v).String()] = n
	}
	h.mu.Lock()
	st.PollErrors, st.LastError = h.pollErrors, h.lastErr
	h.mu.Unlock()
	return st, err
}

var (
	packetsDesc = prometheus.NewDesc("protolab_nicfilter_packets_total",
		"Frames at the egress of the bridge port toward a host, by the modelled NIC filter's verdict.", []string{"port", "verdict"}, nil)
	bytesDesc = prometheus.NewDesc("protolab_nicfilter_bytes_total",
		"Bytes of those frames (without FCS), by verdict.", []string{"port", "verdict"}, nil)
	joinedDesc = prometheus.NewDesc("protolab_nicfilter_joined_groups",
		"Link-layer multicast addresses the host has joined on the interface.", []string{"port"}, nil)
	pollErrDesc = prometheus.NewDesc("protolab_nicfilter_poll_errors_total",
		"Failed reads of the host's multicast list, address or flags.", []string{"port"}, nil)
)

type collector struct{ hosts []*host }

func (c collector) Update(ch chan<- prometheus.Metric) error {
	var errs []error
	for _, h := range c.hosts {
		st, err := h.stats()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for v, n := range st.Counters {
			ch <- prometheus.MustNewConstMetric(packetsDesc, prometheus.CounterValue, float64(n.Packets), st.Port, v)
			ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.CounterValue, float64(n.Bytes), st.Port, v)
		}
		ch <- prometheus.MustNewConstMetric(joinedDesc, prometheus.GaugeValue, float64(len(st.Joined)), st.Port)
		ch <- prometheus.MustNewConstMetric(pollErrDesc, prometheus.CounterValue, float64(st.PollErrors), st.Port)
	}
	return errors.Join(errs...)
}

func statsHandler(hosts []*host, next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /refresh", func(w http.ResponseWriter, _ *http.Request) {
		var errs []error
		for _, h := range hosts {
			if err := h.refresh(); err != nil {
				errs = append(errs, fmt.Errorf("host %s: %w", h.spec.Port, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeStats(w, hosts)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) { writeStats(w, hosts) })
	mux.Handle("/", next)
	return mux
}

// writeStats answers with every host's hostStats.
func writeStats(w http.ResponseWriter, hosts []*host) {
	out := struct {
		Hosts []hostStats `json:"hosts"`
	}{Hosts: []hostStats{}}
	for _, h := range hosts {
		st, err := h.stats()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out.Hosts = append(out.Hosts, st)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
