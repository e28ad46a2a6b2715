"""The nightly reproducibility job: every experiment's nightly profile (else its quick one), each run compared
with its reference, one index page for the night and a trend page over the nights kept on this machine.

Exit status: 0 when every run is VALID and no comparison found a regression or an unexplained change.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import time
from pathlib import Path
from typing import Any

from . import spec
from .errors import EXIT_INVALID, EXIT_OK, EXIT_REGRESSED
from .results import compare
from .results.store import COMPARE_DIR, MANIFEST, REPORT, SUMMARY, TIDY, load_json, read_tidy

NIGHTLY_PROFILES = ("nightly", "quick")
TREND_COLUMNS = 4  # headline columns per experiment: the first table's first ones


def profile_for(path: Path) -> str | None:
    """The spec's nightly profile, else its quick one, else none (the spec as written)."""
    import yaml

    profiles = (yaml.safe_load(path.read_text()) or {}).get("profiles") or {}
    return next((p for p in NIGHTLY_PROFILES if p in profiles), None)


def night_dir(root: Path, now: dt.datetime | None = None) -> Path:
    now = now or dt.datetime.now(dt.UTC)
    d = root / now.strftime("%Y-%m-%d")
    return d if not d.exists() else root / now.strftime("%Y-%m-%dT%H%M%S")


def run_all(names: list[str], results: Path, references: Path, out: Path) -> int:
    """Run, compare, write the night's index and the trend page; return the exit status."""
    from .orchestrator import ExperimentRun

    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for name in names:
        path = spec.find(name)
        profile = profile_for(path)
        print(f"== nightly: {name} (profile {profile or 'as written'})", flush=True)
        t0 = time.monotonic()
        run = ExperimentRun(spec.load(path, profile), results_root=results, references=references)
        status = run.run()
        line: dict[str, Any] = {"experiment": name, "profile": profile, "status": status,
                                "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip
        rundir = run.rundir.path  # run() made it, or raised
        line |= {"run": str(rundir), "valid": bool(load_json(rundir / SUMMARY).get("valid"))}
        line["comparison"] = compare.verdict(rundir, references)  # the run compared itself as it ended
        line["headline"] = headline(rundir)
        lines.append(line)
    (out / "index.json").write_text(json.dumps({"night": out.name, "runs": lines}, indent=1) + "\n")
    (out / "index.html").write_text(index_html(out, lines))
    trend(out.parent)
    return exit_status(lines)


def headline(rundir: Path) -> dict[str, float]:
    """Each headline column's mean over all points and repetitions of the run."""
    m = load_json(rundir / MANIFEST)
    tables = m["spec"].get("tables") or []
    cols = (tables[0].get("columns") or [])[:TREND_COLUMNS] if tables else []
    rows = read_tidy(rundir / TIDY, list((m["spec"].get("sweep") or {}).keys())) if (rundir / TIDY).exists() else []
    out = {}
    for c in cols:
        xs = [r[c] for r in rows if r.get(c) is not None]
        if xs:
            out[c] = sum(xs) / len(xs)
    return out


def exit_status(lines: list[dict[str, Any]]) -> int:
    if any(not ln.get("valid") for ln in lines):
        return EXIT_INVALID
    if any((ln.get("comparison") or {}).get("failed") for ln in lines):
        return EXIT_REGRESSED
    return EXIT_OK


def index_html(out: Path, lines: list[dict[str, Any]]) -> str:
    rows = []
    for ln in lines:
        cmpd = ln.get("comparison") or {}
        counts = cmpd.get("counts") or {}
        verdict = ("no reference" if cmpd.get("reference") is None else
                   f"{counts.get('regressed', 0)} regressed, {counts.get('changed', 0)} changed, "
                   f"{counts.get('improved', 0)} improved")  # fmt: skip
        run = Path(ln["run"]) if ln.get("run") else None
        links = "—"
        if run:
            report, against = html.escape(str(run / REPORT)), html.escape(str(run / COMPARE_DIR / "compare.html"))
            links = f'<a href="{report}">report</a> <a href="{against}">comparison</a>'
        color = "#1e8449" if ln.get("valid") and not cmpd.get("failed") else "#c0392b"
        rows.append(f'<tr><td>{html.escape(ln["experiment"])}</td><td>{html.escape(str(ln["profile"]))}</td>'
                    f'<td style="color:{color}"><b>{"VALID" if ln.get("valid") else "INVALID"}</b></td>'
                    f"<td>{html.escape(verdict)}</td><td>{ln['seconds']:.0f} s</td><td>{links}</td></tr>")  # fmt: skip
    return (f"<!doctype html><meta charset=utf-8><title>protolab nightly {out.name}</title>"
            f"<h1>protolab nightly {html.escape(out.name)}</h1><p><a href=../trend.html>trend over the nights</a></p>"
            "<table border=1 cellpadding=4><tr><th>experiment</th><th>profile</th><th>run</th>"
            f"<th>against the reference</th><th>runtime</th><th>links</th></tr>{''.join(rows)}</table>\n")  # fmt: skip


def trend(root: Path) -> Path:
    """trend.html beside the nights: one plot per headline column over the nights kept here."""
    import base64
    import io

    from matplotlib.figure import Figure

    nights = sorted(p for p in root.iterdir() if (p / "index.json").exists())
    series: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for n in nights:
        for ln in json.loads((n / "index.json").read_text())["runs"]:
            for col, v in (ln.get("headline") or {}).items():
                series.setdefault((ln["experiment"], col), []).append((n.name, v))
    parts = []
    for (exp, col), pts in sorted(series.items()):
        fig = Figure(figsize=(6, 2.4))
        ax = fig.subplots()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o")
        ax.set_title(f"{exp}: {col} (mean over points)", fontsize=9)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80)
        parts.append(f'<img alt="{html.escape(exp)} {html.escape(col)}" '
                     f'src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">')  # fmt: skip
    page = root / "trend.html"
    page.write_text("<!doctype html><meta charset=utf-8><title>protolab nightly trend</title>"
                    f"<h1>protolab nightly: {len(nights)} night(s)</h1>" + "".join(parts) + "\n")  # fmt: skip
    return page
