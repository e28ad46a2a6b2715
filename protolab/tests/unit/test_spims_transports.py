"""The spec's transport names are protolab-spims's registry: TRANSPORTS equals agents/transport/names.txt, which
a Go test (agents/transport/names_test.go) holds equal to the names the Go package registers."""

from __future__ import annotations

from pathlib import Path

from protolab.workloads.spims import TRANSPORTS

NAMES = Path(__file__).resolve().parents[3] / "agents" / "transport" / "names.txt"


def test_transports_are_the_go_registry_s_names():
    lines = [line.strip() for line in NAMES.read_text().splitlines()]
    listed = [line for line in lines if line and not line.startswith("#")]
    assert list(TRANSPORTS) == listed, f"protolab/workloads/spims.py TRANSPORTS vs {NAMES}"
