"""The lab side loads no report machinery: importing a lab module must not import the results package (the
report renderer, statistics and checks) nor matplotlib or jinja2. A lab keeper on a remote host and the ledger
run with it, and a heavy import there is start-up time and memory on every host. Each module is imported in a
fresh interpreter, so what an earlier test imported does not hide it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

LAB_SIDE = ["protolab.lab", "protolab.lab.keeper", "protolab.lab.parts", "protolab.testbed.hosts",
            "protolab.lab.testbed", "protolab.lab.supervise", "protolab.ownership", "protolab.lab.linkstate",
            "protolab.lab.impair", "protolab.lab.selfcheck", "protolab.jsonio", "protolab.lab.quiesce",
            "protolab.lab.guard", "protolab.lab.chaos", "protolab.lab.faults", "protolab.testbed.federation",
            "protolab.testbed.emulation", "protolab.testbed.reach", "protolab.testbed.placement"]  # fmt: skip
HEAVY = ("protolab.results", "matplotlib", "jinja2")


@pytest.mark.parametrize("module", LAB_SIDE)
def test_a_lab_module_does_not_import_the_report_machinery(module):
    code = (
        f"import sys, json, {module}\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))"  # str.startswith(tuple)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [], f"importing {module} loads {json.loads(out)[:5]}"


def test_the_check_itself_sees_a_heavy_import():
    code = f"import sys, json, protolab.results\nprint(json.dumps([m for m in sys.modules if m.startswith({HEAVY!r})]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "protolab.results" in json.loads(out)


@pytest.mark.parametrize("module", ["protolab.results.salvage", "protolab.results.store", "protolab.stats"])
def test_what_the_lab_side_calls_at_run_time_loads_no_renderer(module):
    """`clean` finishing a dead run's folder (results.salvage, from ownership) and the self-check's binomial
    interval (stats) run in keepers too: the results package's names load on first use, not all at once."""
    renderer = ("matplotlib", "jinja2", "protolab.results.render")
    code = f"import sys, json, {module}\nprint(json.dumps([m for m in sys.modules if m.startswith({renderer!r})]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [], f"importing {module} loads {json.loads(out)[:5]}"
