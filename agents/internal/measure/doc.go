// Package measure holds the measuring tools the DIS host and the converter
// share: a log-bucketed histogram of durations (Hist) and the send clock of
// a constant or Poisson process (Pacer).
package measure
