"""Unit tests are rootless and leave nothing on the machine: an SSH control folder a command for a testbed host
would make (protolab.testbed.reach.command) goes to the test's own temporary folder, not /run."""

from __future__ import annotations

import pytest

from protolab.testbed import reach


@pytest.fixture(autouse=True)
def _ssh_control_in_tmp(tmp_path_factory, monkeypatch):
    monkeypatch.setattr(reach, "CONTROL_DIR", tmp_path_factory.mktemp("ssh"))
