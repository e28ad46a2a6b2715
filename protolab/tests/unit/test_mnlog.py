"""Mininet's log module must not change our loggers: a record is written once, with its newline."""

from __future__ import annotations

import io
import logging
import uuid

import pytest

from protolab import mnlog


@pytest.fixture
def logger_class():
    before = logging.getLoggerClass()
    yield
    logging.setLoggerClass(before)


def test_after_mininet_loggers_are_standard_and_write_a_record_once(logger_class):
    mininet_log = pytest.importorskip("mininet.log", reason="Debian's python3-mininet is not installed")
    logging.setLoggerClass(mininet_log.MininetLogger)  # what importing mininet.log does, once per process
    mnlog.quiet()
    log = logging.getLogger(f"protolab.test_mnlog.{uuid.uuid4().hex}")  # created after Mininet, as ours are
    assert type(log) is logging.Logger
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        log.warning("one line")
    finally:
        root.removeHandler(handler)
    assert stream.getvalue() == "one line\n"
    assert logging.getLogger("mininet").level == logging.CRITICAL
