"""Tables and plots with `where` (one topology's rows of a bigger sweep), and null axis values (no CPU budget)."""

from __future__ import annotations

from protolab.model.report import Plot, Table
from protolab.orchestrator.experiment import _cell
from protolab.results.display import axis_str
from protolab.results.plots import plot_png
from protolab.results.sweep import Sweep
from protolab.results.tables import TableData

AXES = {"layout": ["baseline", "switched"], "load": ["250/1k", "450/5k"], "budget": ["0.03", "null"]}


def _sweep_and_rows():
    points, rows = {}, []
    i = 0
    for layout in AXES["layout"]:
        for load in AXES["load"]:
            for budget in AXES["budget"]:
                values = {"layout": layout, "load": load, "budget": budget}
                points[f"p{i:03d}"] = values
                cpu = {"baseline": 0.5, "switched": 0.3}[layout] + (0.1 if load == "450/5k" else 0)
                rows.append({"point": f"p{i:03d}", "repetition": 0, **values, "cv_host_cpu_share_ratio": cpu})
                i += 1
    return Sweep(list(AXES), AXES, points), rows


def test_null_axis_values_are_written_as_the_sweep_shows_them():
    assert axis_str(None) == "null" == _cell(None)
    assert _cell(0.03) == 0.03 and axis_str({"a": 1}) == _cell({"a": 1})


def test_table_where_keeps_one_layouts_rows():
    sweep, rows = _sweep_and_rows()
    t = Table(name="b", title="t", rows=["load"], columns=["cv_host_cpu_share_ratio"],
                   where={"layout": "switched", "budget": None})  # fmt: skip
    data = TableData.build(t, sweep, rows)
    assert data.combos == [("250/1k",), ("450/5k",)]
    assert [row[0]["mean"] for row in data.stats] == [0.3, 0.4]
    assert [row[0]["n"] for row in data.stats] == [1, 1]  # not pooled over the other layout or budget
    assert data.pooled == [] and "Only the points with layout = switched, budget = null." in data.note
    # without where, the layouts and budgets are pooled
    whole = TableData.build(t.model_copy(update={"where": {}}), sweep, rows)
    assert [row[0]["n"] for row in whole.stats] == [4, 4] and whole.pooled == ["layout", "budget"]


def test_plot_where_draws_only_those_points():
    sweep, rows = _sweep_and_rows()
    p = Plot(name="cpu", title="t", kind="line", x="load", y=["cv_host_cpu_share_ratio"], group="layout",
                  where={"budget": 0.03})  # fmt: skip
    assert plot_png(p, sweep, rows).startswith(b"\x89PNG")
    bad = p.model_copy(update={"where": {"nope": 1}})
    try:
        plot_png(bad, sweep, rows)
    except ValueError as exc:
        assert "not a sweep axis" in str(exc)
    else:
        raise AssertionError("an unknown where axis must fail")
