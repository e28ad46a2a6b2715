"""Hostile strings in every string field of a topology and a spec: each is refused with an error naming the file
and the field, or accepted and harmless (it reaches nothing the lab is built from). Values tried: shell
metacharacters, `$(...)`, backticks, `;`, IPv6 scope IDs (the reported `::%x;touch X;#/0`), `..`, leading dashes,
whitespace, NUL, non-ASCII and very long values. HOSTILE_TRIES sets the values tried per field (default 4)."""

from __future__ import annotations

import copy
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from protolab import spec, topo, topofile
from protolab.errors import SpecError
from protolab.model import types

set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "protolab-hypothesis")  # its caches, not in the checkout

PAYLOAD = "::%x;cd;touch PWNED;#/0"  # the reported route destination
# each makes a value no typed field allows: a shell character, a scope ID, a path step, a control or non-ASCII one
TOKENS = [";", "$(touch X)", "`touch X`", "|", "&", ">", "<", " ", "\t", "\n", "%", "%eth0", PAYLOAD, "'", '"',
          "*", "?", "~", "{", "}", "\\", "\x00", "ü", "\u202e", "..", "/..", "#", "!", "="]  # fmt: skip
SAFE_TEXT = st.text(alphabet="abcz019._-/:", max_size=6)
HOSTILE = st.one_of(
    st.builds(lambda a, bad, b: a + bad + b, SAFE_TEXT, st.sampled_from(TOKENS), SAFE_TEXT),
    st.builds(lambda rest: "-" + rest, SAFE_TEXT),  # a leading dash: an option to whatever reads it
    st.builds(lambda n, c: c * n, st.integers(300, 5000), st.sampled_from(["a", "1", "ü"])),  # very long
)

TOPOLOGY: dict[str, Any] = {
    "name": "base",
    "description": "a router, two hosts, a loopback and a static route",
    "nodes": {
        "h1": {"role": "client", "image": "protolab/node:latest", "host": "a",
               "routes": [{"to": "192.0.2.0/24", "via": "10.0.1.2"}],
               "interfaces": [{"name": "lo1", "address": "198.51.100.1/32"}]},
        "r1": {"kind": "router", "interfaces": [{"name": "lo1", "address": "192.0.2.1/24"}]},
        "h2": {"nic_filter": "hash64"},
        "s1": {"kind": "switch", "multicast": "snooping"},
    },
    "links": [{"endpoints": ["r1", "h2"], "rate": "10Mbit", "addresses": ["10.0.9.1/24", "10.0.9.2/24"],
               "segment": "wan", "impairments": {"forward": {"delay": "10ms", "loss": "1%"}}},
              {"endpoints": ["s1", "h2"], "rate": "100Mbit"}],
    "segments": [{"name": "lan", "kind": "hub", "members": ["h1", "r1"], "capacity": "10Mbit", "bridge": "b1",
                  "subnet": "10.0.1.0/24"}],
}  # fmt: skip
SPEC: dict[str, Any] = {
    "name": "hostile",
    "description": "every string field tried with hostile values",
    "seed": {"document": "003", "reproduces": "none (a test)"},
    "topology": TOPOLOGY,
    "nodes": {"default": {"image": "protolab/node", "command": ["--listen", ":9100"]}, "h2": {"cpus": 0.5}},
    "phases": [{"name": "echo",
                "tasks": [{"kind": "ping", "name": "p1", "client": "h1", "server": "h2", "interval": "10ms",
                           "duration": "2s"}],
                "faults": [{"node": "h2", "at": "1s", "action": "pause", "for": "0.5s"},
                           {"link": ["r1", "h2"], "at": "1s", "action": "down"}]}],
    "measurements": [{"name": "h2_rx", "node": "h2", "interface": "h2-eth0", "phase": "echo"}],
    "checks": [{"name": "echo crosses", "column": "p1_rtt_mean_seconds", "min": 0.001, "max": 1}],
    "profiles": {"quick": {}, "full": {}},
}  # fmt: skip
PROSE = {("description",), ("seed", "reproduces"), ("seed", "document"), ("checks", 0, "name")}  # text, read by people
WHERE = "hostile.yaml"
Path_ = tuple[Any, ...]


def string_fields(obj: Any, path: Path_ = ()) -> Iterator[tuple[Path_, bool]]:
    """Every string in obj: (its path, whether it is a mapping's key)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield (*path, k), True
            yield from string_fields(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from string_fields(v, (*path, i))
    elif isinstance(obj, str):
        yield path, False


def replaced(base: dict[str, Any], path: Path_, is_key: bool, value: str) -> dict[str, Any]:
    out = copy.deepcopy(base)
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    if is_key:
        parent[value] = parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    return out


def field_named(msg: str, path: Path_, is_key: bool, value: str) -> bool:
    """The error names the field: a key by itself or the mapping it was in, a value by its field's name (the last
    name on its path)."""
    if is_key and (value in msg or repr(value) in msg):
        return True
    names = [str(p) for p in (path[:-1] if is_key else path) if isinstance(p, str)]
    return bool(names) and names[-1] in msg


TOPOLOGY_FIELDS = list(string_fields(TOPOLOGY))
SPEC_FIELDS = [f for f in string_fields(SPEC) if f[0][0] not in ("topology", "profiles")]  # topology: above
TRIES_PER_FIELD = int(os.environ.get("HOSTILE_TRIES", "4"))  # per field; a long run: HOSTILE_TRIES=200


def _load(raw: dict[str, Any]) -> spec.Plan:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / WHERE
        f.write_text(yaml.safe_dump(raw))
        return spec.load(f)


BASE_PLAN = _load(SPEC)


def test_the_bases_are_valid():
    t = topofile.resolve(topofile.parse(copy.deepcopy(TOPOLOGY), WHERE), WHERE)
    assert t.type_problems() == [] and {h.name for h in t.hosts} == {"h1", "r1", "h2"}
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / WHERE
        f.write_text(yaml.safe_dump(SPEC))
        assert len(spec.load(f).points) == 1


@pytest.mark.parametrize("field", TOPOLOGY_FIELDS, ids=lambda f: ".".join(map(str, f[0])) + (" (key)" if f[1] else ""))
@settings(max_examples=TRIES_PER_FIELD, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=HOSTILE)
def test_a_hostile_topology_value_is_refused_naming_the_field(field, value):
    path, is_key = field
    raw = replaced(TOPOLOGY, path, is_key, value)
    try:
        t = topofile.resolve(topofile.parse(raw, WHERE), WHERE)
    except SpecError as exc:
        msg = str(exc)
        assert msg.startswith(f"{WHERE}: invalid topology\n"), msg
        assert field_named(msg, path, is_key, value), (path, msg)
        return
    # accepted: prose only, and it reaches nothing the lab is built from
    assert path in PROSE, (path, value)
    assert t.to_json() == topofile.resolve(topofile.parse(copy.deepcopy(TOPOLOGY), WHERE), WHERE).to_json(), path


@pytest.mark.parametrize("field", SPEC_FIELDS, ids=lambda f: ".".join(map(str, f[0])) + (" (key)" if f[1] else ""))
@settings(max_examples=TRIES_PER_FIELD, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=HOSTILE)
def test_a_hostile_spec_value_is_refused_naming_the_file_and_field(field, value):
    path, is_key = field
    raw = replaced(SPEC, path, is_key, value)
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / WHERE
        f.write_text(yaml.safe_dump(raw))
        try:
            plan = spec.load(f)
        except SpecError as exc:
            msg = str(exc)
            assert msg.startswith(f"{f}: "), msg
            assert field_named(msg, path, is_key, value), (path, msg)
            return
    if path[:3] == ("nodes", "default", "command"):  # arguments of the agent in its container: one argv item each
        assert list(spec.node_settings(plan.base.topology.build(), plan.base.nodes)[2].values())[0][path[3]] == value
        return
    assert path in PROSE, (path, value)
    assert lab_facing(plan) == lab_facing(BASE_PLAN), path


def lab_facing(plan: spec.Plan) -> str:
    """What a lab is built and driven from: the topology, the containers' settings, tasks, faults, measurements."""
    exp = plan.points[0].experiment
    t = exp.topology.build()
    parts = [t.to_json(), spec.node_settings(t, exp.nodes), [ph.model_dump() for ph in exp.phases],
             [m.model_dump() for m in exp.measurements]]  # fmt: skip
    return json.dumps(parts, default=str, sort_keys=True)


def test_the_reported_route_is_refused_in_a_file_naming_it_the_field_and_why(tmp_path):
    raw = copy.deepcopy(TOPOLOGY)
    raw["nodes"]["h1"]["routes"] = [{"to": PAYLOAD, "via": "10.0.1.2"}]
    f = tmp_path / "pwned.yaml"
    f.write_text(yaml.safe_dump(raw))
    with pytest.raises(SpecError) as err:
        topofile.load(f)
    assert str(err.value) == (f"{f}: invalid topology\n  nodes.h1.routes.0.to: {PAYLOAD!r}: an IPv6 scope ID (%...) "
                              "is not allowed; give a plain address")  # fmt: skip


@pytest.mark.parametrize(
    "check, value",
    [(types.plain_network, "fe80::/64%eth0"), (types.plain_address, "fe80::1%eth0"), (types.plain_interface, PAYLOAD),
     (types.plain_network, "10.0.0.0/8 "), (types.plain_address, "١٢.0.0.1"), (types.safe_name, "-rf"),
     (types.safe_name, "a..b"), (types.safe_name, "a" * 65), (types.safe_name, ".hidden"), (types.file_name, "a/b"),
     (types.file_name, ".."), (types.image_reference, "--privileged"), (types.image_reference, "a/../b")],
)  # fmt: skip
def test_each_type_refuses_what_a_parser_would_let_through(check, value):
    with pytest.raises(ValueError):
        check(value)


def test_a_topology_made_in_code_or_read_back_is_checked_the_same():
    """A generator's output or a topology read back from JSON (a lab keeper's part) passes Topology.validate too."""
    t = topo.build("switched", {"hosts": 2})
    d = t.to_json()
    d["hosts"][0]["routes"] = [(PAYLOAD, "10.0.1.2")]
    d["hosts"][1]["role"] = "$(reboot)"
    d["links"][0]["ip1"] = "10.0.1.1/24;id"
    with pytest.raises(topo.TopologyError) as err:
        topo.Topology.from_json(d).validate("keeper.json")
    msg = str(err.value)
    assert msg.startswith("keeper.json: invalid topology")
    assert "route to '::%x;cd;touch PWNED;#/0'" in msg and "role" in msg and "10.0.1.1/24;id" in msg
