"""The workload contract: one registration per kind, runners imported only when a phase needs them, one
reader of the tools' JSON reports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from protolab.registry import UnknownKindError
from protolab.workloads import TASK_MODELS, WORKLOADS, WorkloadError, WorkloadRunner, runner_for
from protolab.workloads.base import json_report


def test_every_kind_registers_its_model_and_a_runner_on_the_base():
    assert set(TASK_MODELS) == set(WORKLOADS.names()) >= {"command", "converter", "dis", "iperf3", "ping"}
    for kind, w in WORKLOADS.items():
        assert TASK_MODELS[kind] is w.model
        assert issubclass(w.runner_class(), WorkloadRunner), kind


def test_loading_specs_imports_no_runner():
    code = "import sys, protolab.spec; print(sorted(m for m in sys.modules if m.endswith('_runner')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_runner_for_an_unknown_kind_names_the_known_ones():
    class Odd:
        kind = "nope"

    with pytest.raises(UnknownKindError, match="known: command, converter"):
        runner_for(Odd(), None)  # type: ignore[arg-type]


def test_default_hooks_say_nothing():
    r = WorkloadRunner(TASK_MODELS["ping"].model_validate(
        {"kind": "ping", "name": "p", "duration": "1s", "client": "h1", "server": "h2"}), None)  # fmt: skip
    assert (r.started, r.fault_edges([]), r.series(), r.raw()) == (None, {}, [], {})


@pytest.mark.parametrize(
    ("out", "code", "check", "want"),
    [
        ('{"a": 1}', 0, True, {"a": 1}),  # the whole output (iperf3 -J)
        ('{\n "a": 1\n}\n', 1, False, {"a": 1}),  # pretty-printed, exit status not checked
        ('log line\n{"old": 1}\nmore\n{"a": 2}\n', 0, True, {"a": 2}),  # the last JSON line after logs
    ],
)
def test_json_report_reads_whole_output_or_last_line(out, code, check, want):
    assert json_report(out, "tool", code, "", check_exit=check) == want


@pytest.mark.parametrize(
    ("out", "code", "check", "match"),
    [
        ('{"error": "unable to connect"}', 1, False, "tool: unable to connect"),
        ('{"a": 1}', 2, True, "tool: exit 2, no JSON report"),
        ("segfault", 139, True, "exit 139, no JSON report: boom"),
        ("{broken", 0, True, "no JSON report"),
        ("[1, 2]", 0, True, "no JSON report"),
    ],
)
def test_json_report_refuses_errors_and_missing_reports(out, code, check, match):
    with pytest.raises(WorkloadError, match=match):
        json_report(out, "tool", code, "boom" if code == 139 else "", check_exit=check)
