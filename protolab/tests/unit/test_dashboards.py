"""protolab.dashboards: the committed JSON is the generator's, and every dashboard has what the issue asks."""

import json
import re

import pytest

from protolab import dashboards

RULES = (dashboards.REPO / "images" / "monitor" / "rules" / "protolab.rules.yml").read_text()
RECORDED = set(re.findall(r"record: (\S+)", RULES))


def test_committed_dashboards_are_the_generators_output():
    assert dashboards.check() == [], "run `protolab dashboards` and commit dashboards/*.json"


def test_check_finds_stale_missing_and_unknown_files(tmp_path):
    dashboards.write(tmp_path)
    assert dashboards.check(tmp_path) == []
    (tmp_path / "overview.json").write_text("{}")
    (tmp_path / "link-fidelity.json").unlink()
    (tmp_path / "old.json").write_text("{}")
    problems = "\n".join(dashboards.check(tmp_path))
    assert "overview.json differs" in problems
    assert "link-fidelity.json is missing" in problems
    assert "old.json is not generated" in problems


@pytest.mark.parametrize("name", sorted(dashboards.generated()))
def test_dashboard_has_variables_fault_annotation_and_uses_the_rules(name):
    d = json.loads(dashboards.generated()[name])
    assert [v["name"] for v in d["templating"]["list"]] == ["run", "node"]
    assert [a["expr"] for a in d["annotations"]["list"]] == ["link:protolab_fault_active:max > 0"]
    panels = [p for p in d["panels"] if p["type"] != "row"]
    assert len(panels) >= 4
    for p in panels:
        assert p["protolab"]["family"] in dashboards.FAMILIES, p["title"]
        for t in p["targets"]:
            names = set(re.findall(r"[a-z_]+:[a-z_0-9]+:[a-z_0-9]+", t["expr"]))
            raw = "protolab_fault_timing_error_seconds" in t["expr"]  # a gauge: nothing to record
            assert raw or (names and names <= RECORDED), (p["title"], t["expr"], names - RECORDED)
            if p["protolab"]["family"] != "faults":  # the orchestrator's series carry no run label
                assert 'run=~"$run"' in t["expr"], (p["title"], t["expr"])


def test_overview_has_the_panels_the_issue_lists():
    titles = [p["title"] for p in json.loads(dashboards.generated()["overview.json"])["panels"]]
    for want in ("CPU per node", "Packets/s", "Messages/s", "delay p50 / p99", "Drops/s", "Active faults"):
        assert any(want in t for t in titles), (want, titles)


def test_panel_queries_lists_targets_and_annotations():
    d = json.loads(dashboards.generated()["overview.json"])
    qs = dashboards.panel_queries(d)
    assert {q["family"] for q in qs} == {"lab", "faults", "messages"}
    assert sum(len(p.get("targets", [])) for p in d["panels"]) + 1 == len(qs)
