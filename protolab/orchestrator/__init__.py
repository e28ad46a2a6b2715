"""The orchestrator: a run as named steps (experiment), its session (signals, progress, manifest,
teardown), one phase at a time (phase), Prometheus samples into columns (collect) and the end (summary)."""

from .experiment import ExperimentRun
from .phase import phase_window

__all__ = ["ExperimentRun", "phase_window"]
