"""protolab.results.store: run folders, raw and tidy files."""

import json
import re
from datetime import UTC, datetime

import pytest

from protolab.results.store import (
    RAW_COLUMNS,
    ResultsError,
    RunDir,
    latest,
    load_manifest,
    load_summary,
    new_run_id,
    read_raw,
    read_tidy,
    write_tidy,
)


def test_run_id_format_is_utc_and_sortable():
    rid = new_run_id(datetime(2026, 11, 22, 3, 15, 0, tzinfo=UTC))
    assert re.fullmatch(r"20261122T031500Z-[0-9a-f]{4}", rid)
    assert len({new_run_id()[-4:] for _ in range(50)}) > 1  # the suffix is random


def test_create_makes_unique_folders(tmp_path):
    a = RunDir.create(tmp_path, "smoke")
    b = RunDir.create(tmp_path, "smoke")
    assert a.path != b.path
    assert a.path.parent == tmp_path / "smoke"
    assert (a.path / "raw").is_dir()
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{4}", a.run_id)
    assert a.experiment == "smoke"


def test_create_refuses_existing_run_id(tmp_path):
    r = RunDir.create(tmp_path, "smoke", "20260101T000000Z-0001")
    (r.path / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError):
        RunDir.create(tmp_path, "smoke", "20260101T000000Z-0001")
    assert (r.path / "keep.txt").read_text() == "x"


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".."])
def test_create_rejects_path_like_names(tmp_path, bad):
    with pytest.raises(ValueError):
        RunDir.create(tmp_path, "smoke", bad)


def test_write_json_and_load(tmp_path):
    r = RunDir.create(tmp_path, "smoke", "r1")
    r.write_json(
        "manifest.json", {"schema_version": 1, "experiment": "smoke", "run_id": "r1", "spec": {}, "points": []}
    )
    r.write_json("summary.json", {"schema_version": 1, "valid": True, "x": float("nan")})
    assert load_manifest(r.path)["run_id"] == "r1"
    assert load_summary(r.path)["x"] is None  # NaN is not JSON: stored as null
    assert not list(r.path.glob(".*tmp"))


def test_load_rejects_other_schema_versions_and_incomplete_manifests(tmp_path):
    r = RunDir.create(tmp_path, "smoke", "r1")
    r.write_json("summary.json", {"schema_version": 2})
    with pytest.raises(ResultsError, match="schema_version"):
        load_summary(r.path)
    r.write_json("manifest.json", {"schema_version": 1, "experiment": "smoke"})
    with pytest.raises(ResultsError, match="missing"):
        load_manifest(r.path)


def test_raw_writer_appends_with_one_header(tmp_path):
    r = RunDir.create(tmp_path, "smoke", "r1")
    with r.raw_writer() as w:
        w.write("p000", 0, "flows", "node_network_receive_bytes_total", {"node": "h3", "device": "h3-eth0"}, 1.5, 10.0)
    with r.raw_writer() as w:
        n = w.write_rows(
            [
                ("p000", 1, "flows", "s", {"b": "2", "a": "1"}, 2.0, 20.0),
                {
                    "point": "p001",
                    "repetition": 0,
                    "phase": "flows",
                    "series": "s",
                    "labels": "{}",
                    "timestamp_seconds": 3,
                    "value": 0.1,
                },
            ]
        )
    assert n == 2
    lines = (r.path / "raw" / "series.csv").read_text().splitlines()
    assert lines[0] == ",".join(RAW_COLUMNS)
    assert len(lines) == 4
    rows = read_raw(r.path / "raw" / "series.csv")
    assert rows[0]["labels"] == {"device": "h3-eth0", "node": "h3"}
    assert rows[1]["repetition"] == 1 and rows[1]["value"] == 20.0
    assert rows[2]["point"] == "p001" and rows[2]["value"] == 0.1


def test_tidy_round_trip(tmp_path):
    axes = ["topology", "rate", "shape"]
    cols = ["h3_rx_bits_per_second", "f1_loss_ratio", "f1_retransmits_total"]
    rows = [
        {
            "point": "p000",
            "repetition": 0,
            "topology": "hub",
            "rate": "10Mbit",
            "shape": {"k": 1},
            "h3_rx_bits_per_second": 9581234.123456789,
            "f1_loss_ratio": None,
            "f1_retransmits_total": 3,
        },
        {
            "point": "p000",
            "repetition": 1,
            "topology": "hub",
            "rate": "10Mbit",
            "shape": {"k": 1},
            "h3_rx_bits_per_second": 0.1 + 0.2,
            "f1_loss_ratio": float("nan"),
        },
    ]
    path = write_tidy(tmp_path / "tidy.csv", rows, axes, cols)
    assert path.read_text().splitlines()[0] == "point,repetition,topology,rate,shape," + ",".join(cols)
    back = read_tidy(path, axes)
    assert back[0] == {
        "point": "p000",
        "repetition": 0,
        "topology": "hub",
        "rate": "10Mbit",
        "shape": '{"k": 1}',
        "h3_rx_bits_per_second": 9581234.123456789,
        "f1_loss_ratio": None,
        "f1_retransmits_total": 3.0,
    }
    assert back[1]["h3_rx_bits_per_second"] == 0.1 + 0.2  # exact float round trip
    assert back[1]["f1_loss_ratio"] is None and back[1]["f1_retransmits_total"] is None
    # without axes, a column is measured iff its name carries a unit suffix
    assert read_tidy(path) == back


def test_tidy_numeric_axis_stays_a_string(tmp_path):
    path = write_tidy(
        tmp_path / "t.csv", [{"point": "p000", "repetition": 0, "hosts": 4, "x_seconds": 0.5}], ["hosts"], ["x_seconds"]
    )
    assert read_tidy(path) == [{"point": "p000", "repetition": 0, "hosts": "4", "x_seconds": 0.5}]


def test_tidy_leaves_out_undeclared_columns_with_a_warning(tmp_path, caplog):
    p = write_tidy(
        tmp_path / "t.csv", [{"point": "p0", "repetition": 0, "oops_ratio": 1, "a_ratio": 0.5}], [], ["a_ratio"]
    )
    assert p.read_text() == "point,repetition,a_ratio\np0,0,0.5\n"
    assert "oops_ratio" in caplog.text


def test_tidy_rejects_repeated_columns(tmp_path):
    with pytest.raises(ValueError, match="repeat"):
        write_tidy(tmp_path / "t.csv", [], ["a_ratio"], ["a_ratio"])


def test_read_tidy_reports_bad_numbers(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("point,repetition,a_ratio\np000,0,abc\n")
    with pytest.raises(ResultsError, match=":2:"):
        read_tidy(p)


def test_rundir_read_tidy_uses_manifest_axes(tmp_path):
    r = RunDir.create(tmp_path, "smoke", "r1")
    # an axis whose name looks like a measured column: only the manifest can tell
    r.write_json(
        "manifest.json",
        {
            "schema_version": 1,
            "experiment": "smoke",
            "run_id": "r1",
            "spec": {"sweep": {"loss_ratio": ["0.01"]}},
            "points": [],
        },
    )
    r.write_tidy(
        [{"point": "p000", "repetition": 0, "loss_ratio": "0.01", "y_ratio": 0.5}], ["loss_ratio"], ["y_ratio"]
    )
    assert r.read_tidy()[0]["loss_ratio"] == "0.01"


def test_latest(tmp_path):
    assert latest(tmp_path, "smoke") is None
    for rid in ["20260101T000000Z-aaaa", "20261122T031500Z-0000", "20260601T120000Z-ffff"]:
        r = RunDir.create(tmp_path, "smoke", rid)
        r.write_json("manifest.json", {"schema_version": 1})
    RunDir.create(tmp_path, "smoke", "20991231T000000Z-0000")  # no manifest yet: not a run to report
    RunDir.create(tmp_path, "other", "20991231T000000Z-0001").write_json("manifest.json", {})
    assert latest(tmp_path, "smoke") == tmp_path / "smoke" / "20261122T031500Z-0000"


def test_json_is_strict(tmp_path):
    r = RunDir.create(tmp_path, "smoke", "r1")
    p = r.write_json("x.json", {"a": [float("inf"), 1.5]})
    assert json.loads(p.read_text()) == {"a": [None, 1.5]}
    assert "Infinity" not in p.read_text()
