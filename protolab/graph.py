"""Drawings of a topology: Graphviz dot and Mermaid text, and dot rendered to SVG, PNG or PDF.

Hosts are boxes (name, role unless 'host', image when set), routers (role 'router' or forwarding) 3-D boxes
in dot and hexagons in Mermaid, learning switches rounded boxes, hubs ellipses labelled with their shared
capacity. Each link is one undirected edge labelled with its rate and, when given, each direction's
impairment ("h1→s1: delay 10 ms, loss 1 %"; "↔" when both directions are the same); in dot its ends carry
the interface names (`<node>-eth<N>`, as `Topology.interfaces()` numbers them) and addresses, and a link's
last measured values can be added in another colour. With more than one link segment, the nodes whose links
all lie in one segment are drawn in that segment's cluster, and edges take their segment's colour.

Impairments come in the shapes protolab already uses: the lab's `configured` / `current` mapping
(direction -> (Impairment, at)), a mapping direction -> Impairment, the spec's `LinkImpairment` list (or
its dicts), or the lab's `applied` list. Rendering needs Graphviz's `dot` (Debian: `apt-get install graphviz`).
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import ProtolabError
from .model.impairment import GilbertElliott, Impairment, LinkImpairment, merge_over
from .topo import Host, Link, Switch, Topology, v6_address
from .units import format_duration, format_rate, parse_duration, parse_rate

Direction = tuple[str, str]
Impairments = Mapping[Direction, Any] | Sequence[Any]
FORMATS = ("svg", "png", "pdf")
MEASURED_COLOUR = "#1f5fbf"
SEGMENT_COLOURS = ("#4d4d4d", "#b35806", "#1b7837", "#762a83", "#8c510a", "#c51b7d", "#01665e", "#543005")
_PERCENT_FIELDS = ("loss", "duplicate", "reorder", "corrupt")


# -- words ------------------------------------------------------------------------------------------------
def _spaced(value: str) -> str:
    """'100Mbit' -> '100 Mbit', '10ms' -> '10 ms': the units helpers' forms, with a space for reading."""
    return re.sub(r"^([0-9.]+(?:e[-+]?[0-9]+)?)", r"\1 ", value)


def rate_text(bits_per_second: float) -> str:
    """1e8 -> '100 Mbit/s'."""
    return f"{_spaced(format_rate(bits_per_second))}/s"


def _duration(seconds: float) -> str:
    return _spaced(format_duration(seconds))


def _percent(ratio: float) -> str:
    return f"{ratio * 100:.3g} %"


def impairment_text(imp: Impairment, link_rate: float | None = None) -> str:
    """What one direction does, in words ('delay 10 ms ± 2 ms, loss 1 %'); a rate equal to the link's own
    (the lab shapes every link's rate as an impairment) is not repeated."""
    parts: list[str] = []
    if imp.rate and imp.rate != link_rate:
        parts.append(f"rate {rate_text(imp.rate)}")
    if imp.delay:
        delay = f"delay {_duration(imp.delay)}"
        if imp.jitter:
            delay += f" ± {_duration(imp.jitter)}"
            if imp.distribution != "normal":
                delay += f" ({imp.distribution})"
        parts.append(delay)
    if imp.loss:
        parts.append(f"loss {_percent(imp.loss)}")
    if imp.loss_model:
        g = imp.loss_model
        parts.append(f"bursty loss {_percent(g.mean_loss())} (p {_percent(g.p)}, r {_percent(g.r)})")
    for name in ("duplicate", "reorder", "corrupt"):
        value = getattr(imp, name)
        if value:
            parts.append(f"{name} {_percent(value)}")
    if imp.ber:
        parts.append(f"ber {imp.ber:g}")
    if imp.limit:
        parts.append(f"limit {imp.limit} packets")
    return ", ".join(parts)


# -- impairments in protolab's shapes ------------------------------------------------------------------------
def _from_json(config: Mapping[str, Any]) -> Impairment:
    """An impairment as the lab's `applied` records it (Impairment.model_dump(mode='json'))."""
    values: dict[str, Any] = dict(config)
    if isinstance(values.get("rate"), str):
        values["rate"] = parse_rate(values["rate"])
    for name in ("delay", "jitter"):
        if isinstance(values.get(name), str):
            values[name] = parse_duration(values[name])
    if isinstance(values.get("loss_model"), Mapping):
        values["loss_model"] = GilbertElliott.model_construct(**values["loss_model"])
    return Impairment.model_construct(**values)


def directions(impairments: Impairments | None) -> dict[Direction, tuple[Impairment, str]]:
    """Every direction's impairment and where it applies ('sender' or 'receiver'), from any of the shapes the
    module docstring names; several spec items on one direction merge as the lab merges them."""
    out: dict[Direction, tuple[Impairment, str]] = {}
    if impairments is None:
        return out
    if isinstance(impairments, Mapping):
        for (a, b), value in impairments.items():
            if isinstance(value, Impairment):
                out[(a, b)] = (value, "sender")
            else:
                imp, at = value
                out[(a, b)] = (imp, at)
        return out
    for item in impairments:
        if isinstance(item, Mapping) and "from" in item:  # the lab's `applied`
            out[(item["from"], item["to"])] = (_from_json(item.get("impairment", {})), item.get("at", "sender"))
            continue
        merge_over(out, item if isinstance(item, LinkImpairment) else LinkImpairment.model_validate(item))
    return out


def _check_links(topology: Topology, keys: Iterable[Direction], what: str) -> None:
    pairs = topology.linked()
    for a, b in keys:
        if (a, b) not in pairs:
            raise ValueError(f"{what} on {a} - {b}: topology {topology.kind} has no link between them")


def _direction_lines(link: Link, dirs: Mapping[Direction, tuple[Impairment, str]]) -> list[str]:
    """One line per impaired direction of the link, or one for both when they are the same."""
    a, b = link.node1, link.node2

    def text(src: str, dst: str) -> str:
        if (src, dst) not in dirs:
            return ""
        imp, at = dirs[(src, dst)]
        words = impairment_text(imp, link.rate_bps)
        return words + " (at receiver)" if words and at == "receiver" else words

    fwd, rev = text(a, b), text(b, a)
    if fwd and fwd == rev:
        return [f"{a}↔{b}: {fwd}"]
    return [f"{src}→{dst}: {t}" for src, dst, t in ((a, b, fwd), (b, a, rev)) if t]


def _measured(measured: Mapping[Direction, str] | None, link: Link) -> str | None:
    if not measured:
        return None
    return measured.get((link.node1, link.node2), measured.get((link.node2, link.node1)))


# -- shared layout facts ---------------------------------------------------------------------------------------
def _link_interfaces(topology: Topology) -> list[tuple[str, str]]:
    """(node1's interface, node2's interface) per link: the k-th link touching a node uses its k-th interface."""
    names = topology.interfaces()
    used = dict.fromkeys(names, 0)
    out = []
    for lk in topology.links:
        pair = []
        for n in (lk.node1, lk.node2):
            pair.append(names[n][used[n]])
            used[n] += 1
        out.append((pair[0], pair[1]))
    return out


def _segments(topology: Topology) -> tuple[list[str], dict[str, str]]:
    """The segments in link order, and the segment of each node whose links all lie in one (only when the
    topology has more than one segment: one segment needs no clusters)."""
    segments = list(dict.fromkeys(lk.segment for lk in topology.links))
    if len(segments) < 2:
        return segments, {}
    seen: dict[str, set[str]] = {}
    for lk in topology.links:
        for n in (lk.node1, lk.node2):
            seen.setdefault(n, set()).add(lk.segment)
    return segments, {n: next(iter(s)) for n, s in seen.items() if len(s) == 1}


def _is_router(h: Host) -> bool:
    return h.role == "router" or h.forwarding


def _host_lines(h: Host) -> list[str]:
    lines = [h.name]
    if h.role != "host":
        lines.append(h.role)
    if h.image:
        lines.append(h.image)
    return lines


def _switch_lines(s: Switch) -> list[str]:
    if s.mode == "hub":
        return [f"hub {s.name}"] + ([f"{rate_text(s.capacity_bps)} shared"] if s.capacity_bps else [])
    return [f"switch {s.name}"] + (["IGMP snooping"] if s.multicast_snooping else [])


def _edge_lines(link: Link, dirs: Mapping[Direction, tuple[Impairment, str]]) -> list[str]:
    return ([rate_text(link.rate_bps)] if link.rate_bps else []) + _direction_lines(link, dirs)


# -- Graphviz -------------------------------------------------------------------------------------------------
def dot_quote(text: str) -> str:
    """A dot double-quoted string: backslashes and quotes escaped, newlines as dot's centred line break."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n") + '"'


def _addresses(topology: Topology, ip: str | None) -> list[str]:
    """An interface's IPv4 address and, when the lab has IPv6, its twin."""
    if not ip:
        return []
    return [ip, v6_address(ip)] if topology.ipv6 else [ip]


def _dot_lines(lines: Iterable[str]) -> str:
    return dot_quote("\n".join(lines))


def to_dot(
    topology: Topology,
    impairments: Impairments | None = None,
    measured: Mapping[Direction, str] | None = None,
    title: str | None = None,
) -> str:
    """The topology as Graphviz dot text (an undirected graph); `measured` maps a link (either node order)
    to a short text of its last measured values."""
    topology.validate()
    dirs = directions(impairments)
    _check_links(topology, dirs, "impairment")
    _check_links(topology, measured or {}, "measured values")
    segments, member = _segments(topology)
    colour = {s: SEGMENT_COLOURS[i % len(SEGMENT_COLOURS)] for i, s in enumerate(segments)} if member else {}

    node_decl: dict[str, str] = {}
    for h in topology.hosts:
        shape = "shape=box3d" if _is_router(h) else "shape=box"
        node_decl[h.name] = f"{dot_quote(h.name)} [{shape}, label={_dot_lines(_host_lines(h))}];"
    for s in topology.switches:
        shape = "shape=ellipse, style=dashed" if s.mode == "hub" else 'shape=box, style="rounded"'
        node_decl[s.name] = f"{dot_quote(s.name)} [{shape}, label={_dot_lines(_switch_lines(s))}];"

    out = [
        f"graph {dot_quote(topology.kind)} {{",
        '  graph [rankdir=LR, ranksep=1.2, fontname="Helvetica"'
        + (f", label={dot_quote(title)}, labelloc=t, fontsize=14" if title else "")
        + "];",
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9, labelfontsize=8, labelfontcolor="#555555"];',
    ]
    for seg in segments if member else []:
        inside = [n for n in topology.node_names() if member.get(n) == seg]
        if not inside:
            continue
        out.append(f"  subgraph {dot_quote(f'cluster_{seg}')} {{")
        out.append(f"    label={dot_quote(seg)}; color={dot_quote(colour[seg])}; fontcolor={dot_quote(colour[seg])};")
        out += [f"    {node_decl[n]}" for n in inside]
        out.append("  }")
    out += [f"  {node_decl[n]}" for n in topology.node_names() if n not in member]

    for lk, (if1, if2) in zip(topology.links, _link_interfaces(topology), strict=True):
        attrs = []
        label = [html.escape(line) for line in _edge_lines(lk, dirs)]
        seen = _measured(measured, lk)
        if seen:
            label.append(f'<font color="{MEASURED_COLOUR}">{html.escape(seen)}</font>')
        if label:
            attrs.append(f"label=<{'<br/>'.join(label)}>")
        attrs.append(f"taillabel={_dot_lines([if1, *_addresses(topology, lk.ip1)])}")
        attrs.append(f"headlabel={_dot_lines([if2, *_addresses(topology, lk.ip2)])}")
        if colour:
            attrs.append(f"color={dot_quote(colour[lk.segment])}")
        out.append(f"  {dot_quote(lk.node1)} -- {dot_quote(lk.node2)} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def render(dot_text: str, fmt: str = "svg", timeout: float = 30.0) -> bytes:
    """Graphviz's `dot -T<fmt>` on the text (fmt: svg, png or pdf); its output."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: dot renders {', '.join(FORMATS)}")
    dot = shutil.which("dot")
    if dot is None:
        raise ProtolabError("Graphviz's `dot` is not installed; install Debian's graphviz package: "
                            "apt-get install graphviz")  # fmt: skip
    try:
        p = subprocess.run([dot, f"-T{fmt}"], input=dot_text.encode(), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ProtolabError(f"dot -T{fmt} ran past its {timeout:g} s timeout") from None
    if p.returncode != 0:
        why = p.stderr.decode(errors="replace").strip() or "(no output)"
        raise ProtolabError(f"dot -T{fmt} exited {p.returncode}: {why}")
    return p.stdout


# -- Mermaid --------------------------------------------------------------------------------------------------
_MERMAID_ESCAPES = str.maketrans(
    {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "&": "#amp;", "|": "#124;", "`": "#96;", "\n": " "}
)


def mermaid_text(lines: Iterable[str]) -> str:
    """A quoted Mermaid label: each line's special characters as Mermaid entity codes, lines joined by <br/>."""
    return '"' + "<br/>".join(line.replace("\r", "").translate(_MERMAID_ESCAPES) for line in lines) + '"'


def to_mermaid(topology: Topology, impairments: Impairments | None = None) -> str:
    """The topology as a Mermaid flowchart (`graph LR`); nodes get ids n0, n1, ... in node order, their names
    are in the labels."""
    topology.validate()
    dirs = directions(impairments)
    _check_links(topology, dirs, "impairment")
    segments, member = _segments(topology)
    ids = {n: f"n{i}" for i, n in enumerate(topology.node_names())}

    decl: dict[str, str] = {}
    for h in topology.hosts:
        text = mermaid_text(_host_lines(h))
        decl[h.name] = f"{ids[h.name]}{{{{{text}}}}}" if _is_router(h) else f"{ids[h.name]}[{text}]"
    for s in topology.switches:
        text = mermaid_text(_switch_lines(s))
        decl[s.name] = f"{ids[s.name]}(({text}))" if s.mode == "hub" else f"{ids[s.name]}({text})"

    out = ["graph LR"]
    for i, seg in enumerate(segments if member else []):
        inside = [n for n in topology.node_names() if member.get(n) == seg]
        if inside:
            out.append(f"  subgraph seg{i}[{mermaid_text([seg])}]")
            out += [f"    {decl[n]}" for n in inside]
            out.append("  end")
    out += [f"  {decl[n]}" for n in topology.node_names() if n not in member]
    for lk, (if1, if2) in zip(topology.links, _link_interfaces(topology), strict=True):
        ends = " ".join([if1, *_addresses(topology, lk.ip1), "—", if2, *_addresses(topology, lk.ip2)])
        label = mermaid_text([*_edge_lines(lk, dirs), ends])
        out.append(f"  {ids[lk.node1]} ---|{label}| {ids[lk.node2]}")
    return "\n".join(out) + "\n"
