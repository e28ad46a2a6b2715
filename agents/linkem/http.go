package linkem

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"protolab/agents/metrics"
)

// MaxConfigBody bounds the size of a PUT /config body.
const MaxConfigBody = 64 << 10

// NewHandler serves /config for emu next to what metrics.NewHandler serves
// (/metrics from g, /healthz, /).
//
//	GET /config  200 Applied (the configuration in force, its generation and since when)
//	PUT /config  body: a Config; 200 Applied with the time it took effect,
//	             400 {"error": "..."} naming every invalid field, 413 if too large
func NewHandler(emu *Emulator, g prometheus.Gatherer, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = discardLogger()
	}
	mux := http.NewServeMux()
	mux.Handle("/config", &configHandler{emu: emu, logger: logger})
	mux.Handle("/", metrics.NewHandler(g, logger))
	return mux
}

type configHandler struct {
	emu    *Emulator
	logger *slog.Logger
}

func (h *configHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		writeJSON(w, http.StatusOK, h.emu.Config())
	case http.MethodPut:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxConfigBody))
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("reading body: %w", err))
			return
		}
		cfg, err := DecodeConfig(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		applied, err := h.emu.SetConfig(cfg)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, applied)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT")
		writeError(w, http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed on /config (GET or PUT)", r.Method))
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}
