"""A table reference in a results folder's manifest is read only from inside seed-tables/ (defence in depth:
the spec refuses such references too, but a manifest is a file anyone can edit)."""

import json

import pytest

from protolab.model.report import Table, TableReference
from protolab.results import ResultsError, render_all
from protolab.results.seedtables import load_for_run, results_copy

from .test_results_render import make_run

SEED_CSV = "topology,rate,h3_rx_bits_per_second\nhub,10Mbit,9.5e6\n"


def _refer(run_dir, file):
    path = run_dir / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["spec"]["tables"][0]["reference"] = {"file": file, "citation": "somewhere"}
    path.write_text(json.dumps(manifest))
    return manifest


def test_a_manifest_reference_with_dotdot_is_not_read(tmp_path):
    run_dir = make_run(tmp_path)
    (tmp_path / "secret.csv").write_text(SEED_CSV)  # beside the spec, outside seed-tables/
    (tmp_path / "seed-tables").mkdir()
    _refer(run_dir, "seed-tables/../secret.csv")
    render_all(run_dir)
    html = (run_dir / "report.html").read_text()
    assert "reference.file &#39;seed-tables/../secret.csv&#39;: &#39;..&#39; is not allowed" in html
    assert not results_copy(run_dir, Table(name="throughput", title="t", rows=["x"], columns=["y"])).exists()


@pytest.mark.parametrize("file", ["../secret.csv", "/tmp/secret.csv", "secret.csv"])
def test_load_for_run_refuses_a_reference_outside_seed_tables(tmp_path, file):
    run_dir = make_run(tmp_path)
    (tmp_path / "secret.csv").write_text(SEED_CSV)
    manifest = _refer(run_dir, file)
    ref = TableReference.model_construct(file=file, citation="somewhere")  # as an unvalidated caller would
    table = Table.model_construct(name="throughput", title="t", rows=["topology", "rate"],
                                  columns=["h3_rx_bits_per_second"], where={}, reference=ref)  # fmt: skip
    with pytest.raises(ResultsError, match=f"{run_dir}: table throughput: reference.file '{file}': "):
        load_for_run(run_dir, manifest, table)


def test_a_symlink_out_of_seed_tables_is_refused(tmp_path):
    run_dir = make_run(tmp_path)
    outside = tmp_path / "secret.csv"
    outside.write_text(SEED_CSV)
    (tmp_path / "seed-tables").mkdir()
    (tmp_path / "seed-tables" / "mini.csv").symlink_to(outside)
    _refer(run_dir, "seed-tables/mini.csv")
    with pytest.raises(ResultsError, match=f"reference 'seed-tables/mini.csv' resolves to {outside}, outside"):
        render_all(run_dir)
    assert not (run_dir / "tables" / "throughput.seed.csv").exists()


def test_the_results_copy_is_not_written_through_a_symlink(tmp_path):
    run_dir = make_run(tmp_path)
    (tmp_path / "seed-tables").mkdir()
    (tmp_path / "seed-tables" / "mini.csv").write_text(SEED_CSV)
    _refer(run_dir, "seed-tables/mini.csv")
    (run_dir / "tables").mkdir(exist_ok=True)
    target = tmp_path / "elsewhere.csv"
    (run_dir / "tables" / "throughput.seed.csv").symlink_to(target)  # dangling: a copy would create it
    with pytest.raises(ResultsError, match="outside the folder"):
        render_all(run_dir)
    assert not target.exists()
