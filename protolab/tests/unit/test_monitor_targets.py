"""Waiting for a lab's agents in Prometheus: a target counts when it is up, and, with `since`, only by a scrape that
began after the lab was up (a redeployed lab with the same names is first found `up` by the last one's scrape)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from protolab import monitor
from protolab.errors import MonitoringError


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).isoformat().replace("+00:00", "Z")


def _prom(monkeypatch, answers: list[list[dict]]) -> monitor.Prometheus:
    p = monitor.Prometheus("http://prometheus.invalid:9090")
    calls = iter(answers)
    last: list[list[dict]] = [answers[-1]]

    def get(path: str, **params):
        assert path == "/api/v1/targets" and params == {"state": "active"}
        last[0] = next(calls, last[0])
        return {"activeTargets": last[0]}

    monkeypatch.setattr(p, "_get", get)
    monkeypatch.setattr(monitor.time, "sleep", lambda _s: None)
    return p


def _t(node: str, health: str, scraped: str) -> dict:
    return {"labels": {"node": node}, "health": health, "lastScrape": scraped}


def test_an_up_target_scraped_before_the_lab_was_up_is_waited_past(monkeypatch):
    up_at = 1_800_000_000.0
    stale = [_t("h1", "up", _iso(up_at - 0.4)), _t("h2", "up", _iso(up_at - 0.3))]  # the last deployment's scrapes
    fresh = [_t("h1", "up", _iso(up_at + 0.2)), _t("h2", "up", _iso(up_at + 0.7))]
    p = _prom(monkeypatch, [stale, stale, fresh])
    seen = []
    real = p._get
    monkeypatch.setattr(p, "_get", lambda path, **kw: seen.append(1) or real(path, **kw))
    p.wait_targets({"h1", "h2"}, since=up_at)
    assert len(seen) == 3  # not before the fresh scrapes
    p2 = _prom(monkeypatch, [stale])
    p2.wait_targets({"h1", "h2"})  # without `since`, up is up (tests that deploy a lab of their own)


def test_a_target_never_scraped_since_times_out_naming_it(monkeypatch):
    up_at = 1_800_000_000.0
    answers = [[_t("h1", "up", _iso(up_at + 1)), _t("h2", "up", "0001-01-01T00:00:00Z")]]
    p = _prom(monkeypatch, answers)
    clock = iter(range(0, 10_000, 5))
    monkeypatch.setattr(monitor.time, "monotonic", lambda: next(clock))
    with pytest.raises(MonitoringError, match=r"\['h2'\]"):
        p.wait_targets({"h1", "h2"}, since=up_at, timeout=30)


@pytest.mark.parametrize(
    "text, want",
    [("2026-12-06T22:00:00.123456789Z", 1796594400.123456), ("2026-12-06T23:00:00.5+01:00", 1796594400.5),
     ("0001-01-01T00:00:00Z", None), ("", 0.0), (None, 0.0), ("yesterday", 0.0)],
)  # fmt: skip
def test_a_last_scrape_is_read_as_prometheus_writes_it(text, want):
    got = monitor._scraped_at({"lastScrape": text} if text is not None else {})
    if want is None:
        assert got < 0  # Go's zero time: before anything
    else:
        assert got == pytest.approx(want, abs=1e-6)


def test_a_measurement_waits_for_the_scrape_after_its_end_and_no_longer(monkeypatch):
    """After a phase, the run waits until every node's agent and its exporter were scraped after the window's end
    (at most SCRAPE_SETTLE_SECONDS); over testbed hosts (two scrapes, through federation) the whole of it; with
    Prometheus not answering, the rest of it (the reads after it say what is wrong)."""
    from types import SimpleNamespace

    from protolab.orchestrator import experiment

    sleeps: list[float] = []
    monkeypatch.setattr(experiment.time, "sleep", sleeps.append)
    lab = SimpleNamespace(topology=SimpleNamespace(hosts=[SimpleNamespace(name="h1"), SimpleNamespace(name="h2")]))
    asked: list[tuple] = []

    class Prom:
        def wait_scraped(self, nodes, since, timeout, poll):
            asked.append((nodes, since, timeout))
            return set()

    run = SimpleNamespace(hosts=None, exporter_target={"targets": ["x:1"], "labels": {"node": "orchestrator"}})
    experiment.ExperimentRun._settle_scrapes(run, lab, Prom(), 1234.5)  # type: ignore[arg-type]
    assert asked == [({"h1", "h2", "orchestrator"}, 1234.5, experiment.SCRAPE_SETTLE_SECONDS)] and sleeps == []
    run.hosts = object()
    experiment.ExperimentRun._settle_scrapes(run, lab, Prom(), 1234.5)  # type: ignore[arg-type]
    assert len(asked) == 1 and sleeps == [experiment.SCRAPE_SETTLE_SECONDS]

    class Down:
        def wait_scraped(self, *_a, **_k):
            raise MonitoringError("prometheus /api/v1/targets: HTTP 503")

    sleeps.clear()
    run.hosts = None
    experiment.ExperimentRun._settle_scrapes(run, lab, Down(), 1234.5)  # type: ignore[arg-type]
    assert len(sleeps) == 1 and 0 < sleeps[0] <= experiment.SCRAPE_SETTLE_SECONDS
