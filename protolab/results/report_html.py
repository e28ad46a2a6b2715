"""report.html: one self-contained file (CSS inline, plots as data URIs, no external references), rendered
with jinja2 from templates/report.html.j2."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ..model.report import Plot
from ..stats import clean
from . import compare
from .derived import DerivedTable
from .discussion import Filled, paragraphs
from .display import Display, axis_str
from .sweep import Sweep
from .tables import TableData

TEMPLATES = Path(__file__).resolve().parent / "templates"
REPORT_TEMPLATE = "report.html.j2"


def _kv(d: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    def show(v: Any) -> str:
        if isinstance(v, (dict, list)):
            return json.dumps(v, sort_keys=True, ensure_ascii=False)
        return "" if v is None else str(v)

    return [(str(k), show(v)) for k, v in (d or {}).items()]


def _percent(v: Any) -> str:
    return "" if v is None else f"{100 * float(v):.1f} %"


def _rate(v: Any) -> str:
    """bytes/s as Mbit/s (or kbit/s below 1 Mbit/s)."""
    if v is None:
        return ""
    bits = 8 * float(v)
    return f"{bits / 1e6:.2f} Mbit/s" if bits >= 1e6 else f"{bits / 1e3:.1f} kbit/s"


def _over_run(environment: Mapping[str, Any]) -> dict[str, Any] | None:
    """SPIMS sec. 5's dynamic environment over the run: the host's CPU and swap, and its busy interfaces."""
    o = environment.get("over_run") or {}
    if not o:
        return None
    rows = [
        [name, _rate(t.get("rx_bytes_per_second")), _rate(t.get("tx_bytes_per_second")),
         str(t.get("rx_packets", "")), str(t.get("tx_packets", ""))]
        for name, t in sorted((o.get("interfaces") or {}).items())
        if t.get("rx_packets") or t.get("tx_packets")
    ]  # fmt: skip
    return {
        "seconds": f"{float(o.get('seconds') or 0):.0f} s",
        "cpu_busy": _percent(o.get("cpu_busy_ratio")),
        "cpu_softirq": _percent(o.get("cpu_softirq_ratio")),
        "swapped": f"{o.get('swapped_in_bytes', 0)} B in, {o.get('swapped_out_bytes', 0)} B out",
        "interfaces": rows,
    }


def _lab_interfaces(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per deployed lab: each interface's offloads as ethtool read them back, and its traffic over the lab's life."""
    out = []
    for i, d in enumerate(manifest.get("deployments") or []):
        offloads, traffic = d.get("offloads") or {}, d.get("interface_traffic") or {}
        names = sorted({*offloads, *traffic})
        if not names:
            continue
        rows = []
        for n in names:
            o, t = offloads.get(n) or {}, traffic.get(n) or {}
            rows.append([n, *(str(o.get(k, "")) for k in ("tso", "gso", "gro", "lro")),
                         _rate(t.get("rx_bytes_per_second")), _rate(t.get("tx_bytes_per_second")),
                         str(t.get("rx_packets", "")), str(t.get("tx_packets", ""))])  # fmt: skip
        topo = d.get("topology") or {}
        out.append({"title": f"lab {i + 1}: {topo.get('kind', '')} {json.dumps(topo.get('params') or {})}",
                    "rows": rows})  # fmt: skip
    return out


def _testbed(manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """A run over several testbed hosts: the hosts, each lab's placement, stitches and clocks, and the tasks whose
    ends were on two hosts (a one-way delay between them is only as good as the two clocks)."""
    tb = manifest.get("testbed")
    if not tb:
        return None
    hosts = [[h["name"], h.get("engine", ""), h.get("underlay") or "", (tb.get("prometheus") or {}).get(h["name"], "")]
             for h in tb.get("hosts") or []]  # fmt: skip
    labs = []
    for i, d in enumerate(manifest.get("deployments") or []):
        t = d.get("testbed") or {}
        by_host: dict[str, list[str]] = {}
        for node, host in ((t.get("placement") or {}).get("nodes") or {}).items():
            by_host.setdefault(host, []).append(node)
        stitches = []
        for u in t.get("underlay") or []:
            rtt = (f"{u['rtt_mean_seconds'] * 1e3:.3f} ms (sd {u['rtt_sd_seconds'] * 1e6:.0f} us)"
                   if "rtt_mean_seconds" in u else u.get("error", "not measured"))  # fmt: skip
            stitches.append(f"{'-'.join(u['link'])}: {u['from']} -> {u['to']}, underlay round trip {rtt}")
        clocks = [f"{h}: offset {c['offset_seconds'] * 1e3:+.3f} ms, within {c['uncertainty_seconds'] * 1e3:.3f} ms"
                  if "offset_seconds" in c else f"{h}: {c.get('error', 'not measured')}"
                  for h, c in sorted((t.get("clocks") or {}).items())]  # fmt: skip
        labs.append({"title": f"lab {i + 1}", "placement": [f"{h}: {', '.join(sorted(n))}" for h, n in
                                                             sorted(by_host.items())],
                     "stitches": stitches, "clocks": clocks})  # fmt: skip
    cross = [f"{task}: {' and '.join(c['hosts'])}, "
             + (f"one-way delays +-{c['uncertainty_seconds'] * 1e3:.3f} ms" if c.get("uncertainty_seconds") is not None
                else "clock not measured: one-way delays unbounded")
             for task, c in sorted((tb.get("cross_host_tasks") or {}).items())]  # fmt: skip
    return {"hosts": hosts, "emulated": tb.get("emulated") or [], "labs": labs, "cross": cross}


def _check_rows(summary: Mapping[str, Any], sweep: Sweep) -> list[dict[str, Any]]:
    out = []
    # failures first (stable: in point order within each), so a glance at the top tells what went wrong
    for c in sorted(summary.get("checks") or [], key=lambda c: bool(c.get("passed"))):
        bound = c.get("bound") or {}
        lo, hi = bound.get("min"), bound.get("max")
        binomial = c.get("trials_column") is not None  # measured is a proportion; the bound is its interval
        column = f"{c['column']}_as_ratio" if binomial else c.get("unit_column") or c["column"]
        disp = Display.for_column(column, [v for v in (c.get("measured"), lo, hi) if v is not None])
        values = {k: axis_str(v) for k, v in (c.get("values") or {}).items()}
        label = sweep.point_labels.get(c.get("point", "")) or ", ".join(f"{k}={v}" for k, v in values.items())
        derived = c.get("derived") is not None  # one entry for all the rows of a derived result: the worst
        if derived:
            label = (f"worst of {c.get('rows', 0)}: " + (", ".join(f"{k}={v}" for k, v in values.items()) or "all")
                     + (f" ({c['why']})" if c.get("why") else ""))  # fmt: skip
        out.append(
            {
                "name": ("seed's conclusion: " if c.get("reproduction") else "") + c["name"],
                "point": c.get("point", ""),
                "label": label,
                "column": c["column"] + (f" - {c['baseline_column']}" if c.get("baseline_column") else ""),
                "n": int(c.get("rows", 0)) if derived else 1,
                "n_passed": int(c.get("rows", 0)) - int(c.get("rows_failed", 0)) if derived else int(bool(c["passed"])),
                "measured": disp.with_unit(c.get("measured")) if c.get("measured") is not None else "not measured",
                "bound": (
                    f"{disp.with_unit(c.get('target'))} inside the {100 * (c.get('confidence') or 0):g}% interval "
                    + disp.bound(lo, hi)
                    if binomial
                    else disp.bound(lo, hi)
                ),
                "passed": bool(c.get("passed")),
                "value": c.get("measured"),
                "disp": disp,
            }
        )
    return out


def _check_groups(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One line per check over all the points (a derived check: the rows) it ran at, failures first: how many
    passed, the measured range."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["name"], r["column"]), []).append(r)
    out = []
    for (name, column), rs in groups.items():
        vals = clean(r["value"] for r in rs)
        disp = rs[0]["disp"]
        lo, hi = (min(vals), max(vals)) if vals else (None, None)
        measured = (
            "not measured"
            if lo is None
            else disp.with_unit(lo)
            if disp.number(lo) == disp.number(hi)
            else f"{disp.number(lo)} .. {disp.with_unit(hi)}"
        )
        bounds = sorted({r["bound"] for r in rs})
        out.append(
            {
                "name": name,
                "column": column,
                "points": sum(r["n"] for r in rs),
                "passed": sum(r["n_passed"] for r in rs),
                "ok": all(r["passed"] for r in rs),
                "measured": measured,
                "bound": bounds[0] if len(bounds) == 1 else "per point",
            }
        )
    return sorted(out, key=lambda g: g["ok"])


SKIP_RE = re.compile(r"^(?P<point>\S+) \((?P<label>.*?)\) task (?P<task>\S+): (?P<why>.*)$", re.S)


def _skipped(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """summary.json's skip lines ('p006 (variant=sctp, ...) task rr: why') grouped by task and reason: one entry
    each, with the points it covers (a line of another shape is an entry of its own)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for line in summary.get("skipped") or []:
        m = SKIP_RE.match(str(line))
        key = (m["task"], m["why"].strip()) if m else ("", str(line))
        groups.setdefault(key, []).append(f"{m['point']} ({m['label']})" if m else "")
    return [{"task": task, "why": why, "points": [p for p in points if p]} for (task, why), points in groups.items()]


def _stat_rows(summary: Mapping[str, Any], sweep: Sweep) -> list[dict[str, str]]:
    out = []
    for pid, cols in (summary.get("statistics") or {}).items():
        for col, s in cols.items():
            if not s.get("n"):
                continue
            disp = Display.for_column(col, [s.get("mean")])
            ci = (
                f"{disp.number(s['ci95_low'])} – {disp.number(s['ci95_high'])}" if s.get("ci95_low") is not None else ""
            )
            out.append(
                {
                    "point": sweep.point_labels.get(pid, pid),
                    "column": disp.header(col),
                    "n": str(s["n"]),
                    "mean": disp.number(s.get("mean")),
                    "ci": ci,
                    "nsd": f"{s['nsd'] * 100:.2f} %" if s.get("nsd") is not None else "",
                }
            )
    return out


class _SpecDumper(yaml.SafeDumper):
    """Multi-line strings (descriptions) as `|` blocks, as people write them."""


def _str_block(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_SpecDumper.add_representer(str, _str_block)


def _yaml(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_SpecDumper, sort_keys=False, allow_unicode=True, width=110)


def _commit(c: Any) -> str:
    """{'commit': 'abc..', 'dirty': False} -> 'abc.. (clean tree)'."""
    if not isinstance(c, Mapping):
        return str(c or "")
    return f"{c.get('commit') or '?'} ({'uncommitted changes' if c.get('dirty') else 'clean tree'})"


def _backend(b: Any) -> str:
    """The impairment backend record -> 'fallback (chosen by probing): HTB + ...; netem unavailable: ...'."""
    if not isinstance(b, Mapping):
        return str(b or "")
    chosen, probe = b.get("chosen"), b.get("probe") or {}
    how = "chosen by probing" if b.get("requested") in (None, "auto") else f"requested: {b.get('requested')}"
    parts = [f"{chosen} ({how})" + (f": {probe[chosen]['why']}" if chosen in probe else "")]
    parts += [f"{name} {'available' if p.get('available') else 'unavailable'}: {p.get('why')}"
              for name, p in probe.items() if name != chosen]  # fmt: skip
    return "; ".join(parts)


def _host(host: Any) -> str:
    """The manifest's host: a name, or the static environment (a mapping with a hostname)."""
    if isinstance(host, Mapping):
        return str(host.get("hostname") or json.dumps(host, sort_keys=True))
    return "" if host is None else str(host)


def _duration(manifest: Mapping[str, Any]) -> str:
    from datetime import datetime

    try:
        a = datetime.fromisoformat(str(manifest["started_at"]).replace("Z", "+00:00"))
        b = datetime.fromisoformat(str(manifest["finished_at"]).replace("Z", "+00:00"))
    except (KeyError, ValueError, TypeError):
        return ""
    secs = int((b - a).total_seconds())
    if secs >= 3600:
        return f"{secs // 3600}h {secs % 3600 // 60:02d}m {secs % 60:02d}s"
    return f"{secs // 60}m {secs % 60:02d}s"


def _comparison(saved: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if saved is None:
        return None
    rows = compare.report_rows(dict(saved))
    return {
        "reference": saved.get("reference", ""),
        "machine": saved.get("machine", ""),
        "counts": ", ".join(f"{n} {s}" for s, n in (saved.get("counts") or {}).items() if n),
        "flagged": [r for r in rows if r["status"] != "unchanged"],
        "unchanged": [r for r in rows if r["status"] == "unchanged"],
    }


def report_html(
    manifest: Mapping[str, Any],
    summary: Mapping[str, Any] | None,
    tables: Sequence[TableData],
    plots: Sequence[tuple[Plot, bytes]],
    sweep: Sweep,
    problems: Sequence[str] = (),
    comparison: Mapping[str, Any] | None = None,
    labs: Sequence[tuple[str, bytes]] = (),
    derived: Sequence[DerivedTable] = (),
    discussion: Sequence[Filled] = (),
) -> str:
    """`comparison`: the run's compare/compare.json (its comparison with the committed reference), if any;
    `labs`: each deployed lab's drawing (name, SVG), as the run wrote it into labs/; `derived`: the spec's
    derived sums, ratios and fits; `discussion`: the spec's paragraphs, filled in from this run."""
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    spec = manifest.get("spec") or {}
    seed = spec.get("seed") or {}
    environment = manifest.get("environment") or {}
    what_ran = [
        ("profile", manifest.get("profile") or "(none)"),
        ("spec file", manifest.get("spec_file") or ""),
        ("git commit", _commit(manifest.get("git_commit"))),
        ("kernel", manifest.get("kernel") or ""),
        ("host", _host(manifest.get("host"))),
        ("impairment backend", _backend(manifest.get("impairment_backend"))),
        ("random seed", "" if manifest.get("random_seed") is None else str(manifest.get("random_seed"))),
        ("started", manifest.get("started_at") or ""),
        ("finished", manifest.get("finished_at") or ""),
        ("duration", _duration(manifest)),
        ("sweep points", str(len(manifest.get("points") or []))),
        ("repetitions", str(spec.get("repetitions", ""))),
    ]
    ctx = {
        "experiment": manifest.get("experiment", ""),
        "run_id": manifest.get("run_id", ""),
        "profile": manifest.get("profile") or "(none)",
        "description": spec.get("description") or "",
        "reproduces": seed.get("reproduces") or "",
        "seed_document": seed.get("document"),
        "valid": None if summary is None else bool(summary.get("valid")),
        "invalid_reasons": list((summary or {}).get("invalid_reasons") or []),
        "checks": (checks := _check_rows(summary or {}, sweep)),
        "check_groups": _check_groups(checks),
        "checks_passed": (summary or {}).get("checks_passed", 0),
        "checks_failed": (summary or {}).get("checks_failed", 0),
        "stats": _stat_rows(summary or {}, sweep),
        "skipped": _skipped(summary or {}),
        "testbed": _testbed(manifest),
        "tables": [
            {
                "name": t.spec.name,
                "title": t.spec.title,
                "headers": t.headers,
                "nrows": len(t.spec.rows),
                "classes": t.classes,
                "rows": t.cells(),
                "note": t.note,
                "seed_note": t.seed_note,
            }
            for t in tables
        ],
        "derived": [
            {
                "name": d.name,
                "title": d.title,
                "lines": d.lines,
                "headers": d.headers,
                "classes": d.classes,
                "rows": d.cells,
                "note": d.note,
                "files": [*d.csv, f"{d.stem}.md"],
                "collapsed": d.kind != "ratio",  # a row per point: below the fit's lines, or folded
            }
            for d in derived
        ],
        "plots": [
            {"name": p.name, "title": p.title, "src": "data:image/png;base64," + base64.b64encode(png).decode()}
            for p, png in plots
        ],
        "what_ran": [(k, v) for k, v in what_ran if v],
        "tool_versions": _kv(manifest.get("tool_versions")),
        "images": _kv(manifest.get("images")),
        "env_static": _kv(environment.get("static")),
        "env_dynamic": _kv(environment.get("dynamic")),
        "over_run": _over_run(environment),
        "lab_interfaces": _lab_interfaces(manifest),
        "guard": json.dumps((summary or {}).get("guard") or {}, indent=2, sort_keys=True, ensure_ascii=False),
        "points": [(p["id"], sweep.point_labels.get(p["id"], "")) for p in manifest.get("points") or []],
        "spec_yaml": _yaml(spec),
        "problems": list(problems),
        "comparison": _comparison(comparison),
        "discussion": [{"title": f.title, "paragraphs": paragraphs(f.text), "missing": f.missing} for f in discussion],
        "labs": [{"name": n, "src": "data:image/svg+xml;base64," + base64.b64encode(svg).decode()} for n, svg in labs],
    }
    return env.get_template(REPORT_TEMPLATE).render(**ctx)
