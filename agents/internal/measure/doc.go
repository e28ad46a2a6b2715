// Package measure holds the measuring tools the DIS host and the converter
// share: a log-bucketed histogram of durations (Hist) and the send clock of
// a constant or Poisson process (Pacer), and a time-weighted level (Level)
// the tp4 ends and QUIC's receiver keep their buffers in.
package measure
