"""A spims result carries its normalized sd over the measurement's runs when that is above 0.05 (SPIMS sec. 7.2):
`<q>_mean_<unit>` cells of a table show `(nsd x)` from the rows' `<q>_nsd_ratio`."""

from __future__ import annotations

from protolab.model.report import Table
from protolab.results.sweep import Sweep
from protolab.results.tables import TableData, runs_nsd_column

SWEEP = Sweep(["transport"], {"transport": ["tcp", "quic"]}, {"p1": {"transport": "tcp"}, "p2": {"transport": "quic"}})


def _row(transport: str, rep: int, mean: float, nsd: float) -> dict:
    return {"point": "p1" if transport == "tcp" else "p2", "repetition": rep, "transport": transport,
            "t2_throughput_mean_bytes_per_second": mean, "t2_throughput_nsd_ratio": nsd,
            "h1_cpu_ratio": 0.5}  # fmt: skip


def _table(rows: list[dict]) -> TableData:
    spec = Table(name="t2", title="Table 2", rows=["transport"],
                 columns=["t2_throughput_mean_bytes_per_second", "h1_cpu_ratio"])  # fmt: skip
    return TableData.build(spec, SWEEP, rows)


def test_the_companion_column_is_the_quantity_s_nsd():
    assert runs_nsd_column("t2_throughput_mean_bytes_per_second") == "t2_throughput_nsd_ratio"
    assert runs_nsd_column("t2_sender_throughput_mean_bytes_per_second") == "t2_sender_throughput_nsd_ratio"
    assert runs_nsd_column("h1_cpu_ratio") is None
    assert runs_nsd_column("t2_throughput_nsd_ratio") is None


def test_a_cell_above_the_bound_carries_its_nsd_and_one_below_does_not():
    # tcp: runs' nsd 0.07 and 0.09 over two repetitions -> 0.08 attached; quic: 0.01 -> nothing
    data = _table([_row("tcp", 0, 1.0e6, 0.07), _row("tcp", 1, 1.0e6, 0.09), _row("quic", 0, 2.0e6, 0.01)])
    cells = {row[0]: row for row in data.cells()}
    assert cells["tcp"][1].endswith("(nsd 0.08)")
    assert "nsd" not in cells["quic"][1]
    assert "nsd" not in cells["tcp"][2], "a column with no runs' nsd gets none"
    md = data.markdown_text()
    assert "(nsd 0.08)" in md and "attached where above 0.05 as SPIMS sec. 7.2 does" in md


def test_no_note_when_nothing_is_attached():
    data = _table([_row("tcp", 0, 1.0e6, 0.05), _row("quic", 0, 2.0e6, 0.01)])  # 0.05 is not above the bound
    assert not any("nsd" in c for row in data.cells() for c in row)
    assert "SPIMS sec. 7.2" not in data.note
