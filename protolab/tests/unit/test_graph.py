"""Topology drawings: dot and Mermaid text of the built-in topologies and awkward hand-made ones, impairments in
the shapes the lab keeps them, and dot rendered for real (skipped where Graphviz is not installed)."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from protolab import graph
from protolab.errors import ProtolabError
from protolab.lab.impair import Backend, Endpoint
from protolab.lab.linkstate import LinkState
from protolab.model.impairment import Impairment, LinkImpairment
from protolab.topo import Host, Link, Switch, Topology, build, v6_address
from protolab.units import format_rate

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")

BUILT_IN = {
    "hub": ("hub", {"hosts": 3}),
    "switched_wan": ("switched", {"hosts": 4, "wan_router": True}),
    "dual_homed": ("dual_homed", {}),
    "converter_100_10": ("converter_lan", {"layout": "converter_100_10"}),
    "converter_hub": ("converter_lan", {"layout": "converter_hub", "hosts": 3}),
}
Q = r'"((?:[^"\\]|\\.)*)"'  # a dot quoted string
NODE_RE = re.compile(rf"^\s*{Q} \[(shape=.*)\];$", re.M)
EDGE_RE = re.compile(rf"^\s*{Q} -- {Q} \[(.*)\];$", re.M)


def _topology(name: str) -> Topology:
    kind, params = BUILT_IN[name]
    return build(kind, params)


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), s)


def _attr(attrs: str, name: str) -> str | None:
    m = re.search(rf"\b{name}={Q}", attrs)
    return _unquote(m.group(1)) if m else None


def _edges(dot: str) -> list[tuple[str, str, str]]:
    return [(_unquote(a), _unquote(b), attrs) for a, b, attrs in EDGE_RE.findall(dot)]


def _svg_texts(svg: bytes) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_every_node_and_link_appears_once(name):
    t = _topology(name)
    dot = graph.to_dot(t)
    declared = [_unquote(n) for n, _ in NODE_RE.findall(dot)]
    assert sorted(declared) == sorted(t.node_names())
    assert [(a, b) for a, b, _ in _edges(dot)] == [(lk.node1, lk.node2) for lk in t.links]

    mermaid = graph.to_mermaid(t)
    ids = {n: f"n{i}" for i, n in enumerate(t.node_names())}
    decl = re.findall(r"^\s*(n\d+)[\[({]", mermaid, re.M)
    assert sorted(decl) == sorted(ids.values())
    edges = re.findall(r"^\s*(n\d+) ---\|\"[^\"]*\"\| (n\d+)$", mermaid, re.M)
    assert edges == [(ids[lk.node1], ids[lk.node2]) for lk in t.links]
    for lk in t.links:
        if lk.rate_bps:
            assert graph.rate_text(lk.rate_bps) in mermaid


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_interface_labels_are_the_topologys_interfaces(name):
    t = _topology(name)
    seen: dict[str, list[str]] = {}
    for a, b, attrs in _edges(graph.to_dot(t)):
        for node, label in ((a, _attr(attrs, "taillabel")), (b, _attr(attrs, "headlabel"))):
            seen.setdefault(node, []).append(label.split("\n")[0])
    linked = {n: names for n, names in t.interfaces().items() if names}
    assert seen == linked
    lk = t.links[0]
    tail = _attr(_edges(graph.to_dot(t))[0][2], "taillabel")
    # the addresses under the interface name: IPv4, then its IPv6 twin (when the lab has IPv6)
    assert tail == f"{t.interfaces()[lk.node1][0]}\n{lk.ip1}\n{v6_address(lk.ip1)}"
    t.ipv6 = False
    tail = _attr(_edges(graph.to_dot(t))[0][2], "taillabel")
    assert tail == f"{t.interfaces()[lk.node1][0]}\n{lk.ip1}"


def test_hub_switch_and_router_shapes():
    hub = graph.to_dot(_topology("hub"))
    decl = {_unquote(n): attrs for n, attrs in NODE_RE.findall(hub)}
    assert "shape=ellipse" in decl["s1"]
    assert _attr(decl["s1"], "label") == "hub s1\n100 Mbit/s shared"
    assert _attr(decl["h1"], "label") == "h1" and "shape=box," in decl["h1"]
    assert "subgraph" not in hub  # one segment: no clusters
    assert re.search(r'^\s*n3\(\("hub s1<br/>100 Mbit/s shared"\)\)$', graph.to_mermaid(_topology("hub")), re.M)

    t = _topology("switched_wan")
    decl = {_unquote(n): attrs for n, attrs in NODE_RE.findall(graph.to_dot(t))}
    assert 'style="rounded"' in decl["s1"] and _attr(decl["s1"], "label") == "switch s1"
    assert "shape=box3d" in decl["r1"] and _attr(decl["r1"], "label") == "r1\nrouter"
    assert _attr(decl["w1"], "label") == "w1\nwan"
    ids = {n: f"n{i}" for i, n in enumerate(t.node_names())}
    assert f'{ids["r1"]}{{{{"r1<br/>router"}}}}' in graph.to_mermaid(t)
    assert f'{ids["s1"]}("switch s1")' in graph.to_mermaid(t)


def test_segments_are_clusters_of_the_nodes_wholly_inside_them():
    t = _topology("dual_homed")
    dot = graph.to_dot(t)
    clusters = dict(re.findall(r'subgraph "cluster_(\w+)" \{\n(.*?)\n  \}', dot, re.S))
    assert set(clusters) == {"path_a", "path_b"}
    assert [_unquote(n) for n, _ in NODE_RE.findall(clusters["path_a"])] == ["s1"]
    assert [_unquote(n) for n, _ in NODE_RE.findall(clusters["path_b"])] == ["s2"]
    colours = {lk.segment: _attr(attrs, "color") for lk, (_, _, attrs) in zip(t.links, _edges(dot), strict=True)}
    assert len(set(colours.values())) == 2  # each segment's edges in its own colour
    assert graph.to_mermaid(t).count("subgraph seg") == 2


def _lab_shapes(t: Topology, items: list[LinkImpairment]):
    """`configured` and `applied` as a lab keeps them: link rates plus the spec's items, through a LinkState."""

    class Quiet(Backend):
        name = "fake"

        def apply(self, sender, receiver, imp, at="sender"):
            return []

    ends = {(lk.node1, lk.node2): (Endpoint(f"{lk.node1}-x", 1), Endpoint(f"{lk.node2}-x")) for lk in t.links}
    wanted = {}
    for lk in t.links:
        if lk.rate_bps:
            base = Impairment(rate=format_rate(lk.rate_bps))
            wanted[(lk.node1, lk.node2)] = wanted[(lk.node2, lk.node1)] = (base, "sender")
    for item in items:  # as Lab._impair merges them
        given = {k: getattr(item, k) for k in item.model_fields_set if k not in ("link", "direction", "at")}
        for d in item.directions():
            wanted[d] = (wanted.get(d, (Impairment(), item.at))[0].model_copy(update=given), item.at)
    state = LinkState(ends, Quiet(), run=lambda *a, **k: "", clear=lambda s, r: None)
    state.configure(wanted)
    return state.configured, state.applied


def test_impairments_in_every_shape_give_the_same_labels():
    t = _topology("switched_wan")
    items = [
        LinkImpairment(link=("h1", "s1"), delay="10ms", loss="1%"),
        LinkImpairment(link=("r1", "w1"), direction="forward", delay="20ms", jitter="2ms", at="receiver"),
        LinkImpairment(link=("h2", "s1"), direction="reverse", rate="5Mbit"),
    ]
    configured, applied = _lab_shapes(t, items)
    spec_dicts = [{"link": ["h1", "s1"], "delay": "10ms", "loss": "1%"}, *items[1:]]  # as a spec's YAML gives them
    labels = {}
    for shape, given in {"spec": items, "spec_dicts": spec_dicts, "configured": configured, "applied": applied}.items():
        labels[shape] = {(a, b): re.search(r"label=<(.*?)>,", attrs) for a, b, attrs in _edges(graph.to_dot(t, given))}
        labels[shape] = {k: m.group(1) if m else None for k, m in labels[shape].items()}
    assert labels["spec"] == labels["configured"] == labels["applied"] == labels["spec_dicts"]
    got = labels["configured"]
    assert got[("h1", "s1")] == "100 Mbit/s<br/>h1↔s1: delay 10 ms, loss 1 %"  # the link's own rate not repeated
    assert got[("r1", "w1")] == "1544 kbit/s<br/>r1→w1: delay 20 ms ± 2 ms (at receiver)"
    assert got[("h2", "s1")] == "100 Mbit/s<br/>s1→h2: rate 5 Mbit/s"
    assert got[("h3", "s1")] == "100 Mbit/s"
    mermaid = graph.to_mermaid(t, configured)
    ends = "h1-eth0 10.0.1.1/24 fd00:10:0:1::1/80 — s1-eth0"
    assert f'"100 Mbit/s<br/>h1↔s1: delay 10 ms, loss 1 %<br/>{ends}"' in mermaid


def test_impairment_or_measurement_on_a_missing_link_is_refused():
    t = _topology("hub")
    with pytest.raises(ValueError, match="no link between"):
        graph.to_dot(t, [LinkImpairment(link=("h1", "h2"), loss="1%")])
    with pytest.raises(ValueError, match="no link between"):
        graph.to_mermaid(t, {("h1", "h2"): Impairment(loss="1%")})
    with pytest.raises(ValueError, match="no link between"):
        graph.to_dot(t, measured={("h1", "h3"): "1 ms"})


def test_measured_values_in_their_own_colour_on_their_link_only():
    t = _topology("hub")
    dot = graph.to_dot(t, measured={("s1", "h2"): "rtt <1 ms & 9.8 Mbit/s"})  # either node order
    by_link = {(a, b): attrs for a, b, attrs in _edges(dot)}
    assert f'<font color="{graph.MEASURED_COLOUR}">rtt &lt;1 ms &amp; 9.8 Mbit/s</font>' in by_link[("h2", "s1")]
    assert [k for k, attrs in by_link.items() if "font color" in attrs] == [("h2", "s1")]


AWKWARD = ['say "hi"', "web-1", "back\\slash", "node", "ünï cødé", "a<b>&c|#d`e"]


@pytest.fixture
def awkward_types(monkeypatch):
    """Topology.validate refuses these names by type (test_hostile_inputs); escaping is the graph's own defense, so
    it is tried here with that check off."""
    monkeypatch.setattr(Topology, "type_problems", lambda self: [])


def _awkward() -> Topology:
    t = Topology(
        "kind with \"quotes\" and\\",
        hosts=[Host(AWKWARD[0], role='odd "role"'), Host(AWKWARD[1], image="img:1"), Host(AWKWARD[2]),
               Host(AWKWARD[4], role="router")],
        switches=[Switch(AWKWARD[3], mode="hub", capacity_bps=10e6), Switch(AWKWARD[5])],
    )  # fmt: skip
    t.links = [Link(AWKWARD[0], AWKWARD[3], ip1="10.0.0.1/24", segment='seg "x"'),
               Link(AWKWARD[1], AWKWARD[3], segment="seg-y"), Link(AWKWARD[2], AWKWARD[5], rate_bps=1e6),
               Link(AWKWARD[4], AWKWARD[5], rate_bps=2.5e6), Link(AWKWARD[3], AWKWARD[4], segment="seg-y")]  # fmt: skip
    return t


@needs_dot
def test_awkward_names_give_dot_that_graphviz_accepts(awkward_types):
    t = _awkward()
    dot = graph.to_dot(t, [LinkImpairment(link=(AWKWARD[0], AWKWARD[3]), delay="1ms")], title='a "title"\\')
    assert sorted(_unquote(n) for n, _ in NODE_RE.findall(dot)) == sorted(t.node_names())
    texts = _svg_texts(graph.render(dot))
    for name in AWKWARD:
        assert any(name in text for text in texts), name
    assert 'odd "role"' in texts and "img:1" in texts and 'a "title"\\' in texts
    assert f"{AWKWARD[0]}↔{AWKWARD[3]}: delay 1 ms" in texts
    assert graph.render(dot, "png").startswith(b"\x89PNG")
    assert graph.render(dot, "pdf").startswith(b"%PDF")


def test_awkward_names_are_escaped_for_mermaid(awkward_types):
    mermaid = graph.to_mermaid(_awkward())
    labels = re.findall(r'"([^"]*)"', mermaid)
    assert all(line.count('"') % 2 == 0 for line in mermaid.splitlines())
    assert "say #quot;hi#quot;<br/>odd #quot;role#quot;" in labels
    assert "switch a#lt;b#gt;#amp;c#124;#35;d#96;e" in labels
    assert not any(c in label.replace("<br/>", "") for label in labels for c in '<>|`"')
    assert mermaid.count("subgraph seg") == 3  # 'seg "x"', 'seg-y' and 'lan' each hold a node wholly inside


def test_render_without_dot_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no dot on the PATH
    with pytest.raises(ProtolabError, match=r"apt-get install graphviz") as err:
        graph.render("graph { a }")
    assert "\n" not in str(err.value)


@needs_dot
def test_render_failures():
    with pytest.raises(ProtolabError, match=r"dot -Tsvg exited 1: .*syntax error"):
        graph.render("graph { a -- }")
    with pytest.raises(ValueError, match="svg, png, pdf"):
        graph.render("graph { a }", "gif")
