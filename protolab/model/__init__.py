"""The data models: what a spec, an impairment, a fault and a report definition are, with no mechanism.

Pure pydantic models and plain data, importable without topologies, labs, runners, workloads or the
impairment backends (protolab.results reads a results folder with these alone):

- base: `Strict`, the one pydantic base (unknown fields are errors).
- impairment: what one direction of a link does to packets (`Impairment`, `LinkImpairment`, ...).
- faults: timed link faults (`Fault`, `Flap`) and the events they expand to (`Event`).
- report: tables, knees, plots and checks of a spec, and where a table's seed reference may live.
"""
