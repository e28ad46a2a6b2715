"""Every transfer syntax (agents/syntax) end to end between two hosts of a real lab, through the runner: raw, BER,
DER, unaligned and aligned PER and skinny, and the derived results built on them (specs/transfer-syntax.yaml's
checks)."""

from __future__ import annotations

import json

import pytest

from .conftest import run_spec

pytestmark = pytest.mark.integration


def test_every_transfer_syntax_crosses_the_lab(tmp_path, no_leftovers):
    """raw, BER, DER, UPER, PER and skinny end to end between two lab hosts, and the derived results built on them
    (the spec's checks: nothing lost or dropped, sizes, skinny's matches, BER's codec cost over raw's)."""
    run, summary = run_spec("transfer-syntax", tmp_path)
    names = {c["name"] for c in summary["checks"]}
    assert {"BER's codec costs more than raw's", "BER is larger than raw", "aligned PER too"} <= names
    (row,) = json.loads((run / "derived.json").read_text())["ratios"]["codec_cost"]["rows"]
    assert row["value"] == row["numerator"]["value"] / row["denominator"]["value"] > 2, row
