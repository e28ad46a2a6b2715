"""Every row of a shipped seed table sits beside a row its spec's full profile measures (no row left unmatched
because its key names a variant or value the sweep spells otherwise), but rows keyed `seed:...`: the seed's own
systems, which nothing here measures."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from protolab import spec
from protolab.model.report import Table
from protolab.results import seedtables


def _tables(path: Path) -> list[Table]:
    raw = yaml.safe_load(path.read_text())
    return [Table.model_validate(t) for t in raw.get("tables") or [] if t.get("reference")]


@pytest.mark.parametrize("path", [p for p in sorted(spec.EXPERIMENTS_DIR.glob("*.yaml")) if _tables(p)],
                         ids=lambda p: p.stem)  # fmt: skip
def test_seed_rows_match_rows_of_the_full_profile(path):
    points = spec.load(path, "full").points
    for table in _tables(path):
        ref = table.reference
        assert ref is not None
        seed = seedtables.parse((spec.EXPERIMENTS_DIR / ref.file).read_text(), table, "", ref.file)
        measured = {seedtables.key([spec._short(p.values[a]) for a in table.rows]) for p in points}
        unmatched = [k for k, _ in seed.rows if seedtables.key(k) not in measured and not seedtables.is_seed_only(k)]
        assert not unmatched, f"{ref.file}: rows {unmatched} match no row of table {table.name} in profile full"


def test_sciop_sctp_bounds_sit_beside_both_sctp_variants():
    (table,) = _tables(spec.EXPERIMENTS_DIR / "multihomed-failover.yaml")
    assert table.reference is not None
    seed = seedtables.parse((spec.EXPERIMENTS_DIR / table.reference.file).read_text(), table, "", "")
    rows = {k: v["rr_rtt_max_seconds"] for k, v in seed.rows}
    assert rows[("loss1", "sctp-table2", "1024B")] == rows[("loss1", "sctp-10ms", "1024B")] == 0.030
    assert rows[("loss1", "tcp", "1024B")] == 1.0
    assert not {v for _c, v, _s in rows} - {"tcp", "sctp-table2", "sctp-10ms"}


def test_seed_only_rows_are_marked_not_misspelt():
    assert seedtables.is_seed_only(("hub", "10Mbit", "seed:FTAM Sun3"))
    assert not seedtables.is_seed_only(("hub", "10Mbit", "tcp"))
    assert not seedtables.is_seed_only(("hub", "10Mbit", "ftam-seed"))


def test_spims_tables_2_to_4_carry_every_system_of_the_paper():
    """FTAM, FTP and TCP on Sun3, DS90 and MicroVAX (and its estimate) as the paper prints them; Sun3 TCP beside
    ours on the 10 Mbit hub, the rest keyed as the paper's own systems."""
    tables = {t.name: t for t in _tables(spec.EXPERIMENTS_DIR / "spims.yaml")}
    # table -> machine -> the protocols it has numbers for; the DS90 has no FTAM number, Table 3 is TCP only
    want = {
        "table2": {"Sun3": "FTAM FTP", "DS90": "FTP TCP", "MicroVAX": "FTAM FTP TCP",
                   "MicroVAX estimate": "FTAM FTP TCP"},
        "table3": {"DS90": "TCP", "MicroVAX": "TCP", "MicroVAX estimate": "TCP"},
        "table4": {"Sun3": "FTAM FTP", "DS90": "FTP TCP", "MicroVAX": "FTAM FTP TCP"},
    }  # fmt: skip
    for name, machines in want.items():
        table = tables[name]
        assert table.reference is not None
        seed = seedtables.parse((spec.EXPERIMENTS_DIR / table.reference.file).read_text(), table, "", "")
        (column,) = seed.columns
        rows = {k: v[column] for k, v in seed.rows}
        assert rows[("hub", "10Mbit", "tcp")] is not None, f"{name}: Sun3 TCP beside ours"
        keyed = {f"seed:{p} {m}" for m, ps in machines.items() for p in ps.split()}
        own = {k[2]: v for k, v in rows.items() if seedtables.is_seed_only(k)}
        assert set(own) == keyed, name
        assert all(v is not None and v > 0 for v in own.values()), name
