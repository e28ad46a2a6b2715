package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ShutdownTimeout bounds how long a graceful shutdown waits for in-flight
// scrapes.
const ShutdownTimeout = 5 * time.Second

// NewHandler serves g on /metrics and a liveness probe on /healthz
// (200, body "ok"). A gather error does not fail the scrape: whatever was
// collected is still served (collector failures show up as
// protolab_scrape_collector_success 0 anyway).
func NewHandler(g prometheus.Gatherer, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      promLogger{logger},
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<html><head><title>protolab agent</title></head><body>`+
			`<h1>protolab agent</h1><p><a href="/metrics">/metrics</a> <a href="/healthz">/healthz</a></p></body></html>`+"\n")
	})
	return mux
}

// promLogger adapts slog to promhttp's Println-style error logger.
type promLogger struct{ l *slog.Logger }

func (p promLogger) Println(v ...interface{}) { p.l.Error(fmt.Sprint(v...)) }

// ListenAndServe listens on addr and serves h until ctx is done, then shuts
// the server down gracefully. It returns nil after a clean shutdown.
func ListenAndServe(ctx context.Context, addr string, h http.Handler, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return Serve(ctx, ln, h, logger)
}

// Serve is ListenAndServe on an existing listener, which it closes.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelError),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("listening", "addr", ln.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}

	logger.Info("shutting down", "reason", context.Cause(ctx))
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", err)
	}
	return nil
}
