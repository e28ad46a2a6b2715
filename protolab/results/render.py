"""Tables, plots and the HTML report of a run, derived from manifest.json, tidy.csv and summary.json alone.

`render_all(run_dir)` can be rerun at any time (e.g. after improving a plot) without rerunning the
experiment; table files come out byte-identical for the same inputs.
It is the entry point; the work is done by tables.py, plots.py and report_html.py, over the sweep as
sweep.py reads it from the manifest and the tidy rows.

- tables/<name>.csv: one row per combination of the table's `rows` axes (sweep order), per column
  `<column>_mean`, `<column>_sd`, `<column>_n` in base units (for programs).
- tables/<name>.md: the same for people: Mbit/s, %, ms, `mean ± sd` when n > 1.
- plots/<name>.png: bar or line charts (matplotlib, Agg), one panel per y column; scatter plots.
- derived.json, tables/derived-<name>.csv and .md: the spec's `derived:` sums, ratios and fits (derived.py).
- discussion.md: the spec's `discussion:` paragraphs, their figures filled in from this run (discussion.py).
- report.html: one self-contained file (CSS inline, plots as data URIs, no external references).

When a table's `rows` (or a plot's `x`/`group`) combine fewer axes than the sweep has, the values of
the other axes are pooled with the repetitions (the notes under tables and plots say so).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..model.report import Derived, Knee, Paragraph, Plot, Table
from .derived import DerivedData, DerivedTable
from .discussion import DISCUSSION_MD, Filled, fill, markdown
from .plots import plot_png, scatter_png
from .rawplots import raw_plot_png
from .report_html import report_html
from .seedtables import load_for_run
from .store import (
    COMPARE_DIR,
    DERIVED,
    FAULT_TIMELINE,
    RAW,
    REPORT,
    SUMMARY,
    TIDY,
    ResultsError,
    load_json,
    load_manifest,
    read_raw,
    read_tidy,
    write_json,
)
from .sweep import Sweep
from .tables import KneeData, TableData
from .timeline import fault_timeline_png

log = logging.getLogger(__name__)


def _derived(run_dir: Path, spec: dict[str, Any], sweep: Sweep, rows: list[dict[str, Any]], plots: list[Plot],
             problems: list[str]) -> tuple[DerivedData, list[Path]]:  # fmt: skip
    """The spec's derived results (empty without `derived:`), and derived.json and their tables written."""
    given = spec.get("derived")
    try:
        dspec = Derived.model_validate(given or {})
    except ValidationError as exc:
        problems.append(f"derived: invalid: {exc.errors()[0]['msg']}")
        dspec, given = Derived(), None
    problems += [f"derived: {why}" for why in dspec.problems(spec.get("sweep") or {}, (), plots)]
    data = DerivedData.build(dspec, sweep, rows)
    problems += [f"derived: {why}" for why in data.problems]
    if not given:
        return data, []
    written = [write_json(run_dir / DERIVED, data.to_json())]
    for t in data.tables():
        written += _write_tables(run_dir, {**t.csv, f"{t.stem}.md": t.markdown_text()})
    return data, written


def _write_tables(run_dir: Path, files: dict[str, str]) -> list[Path]:
    """tables/<name> for each name -> text; the paths written."""
    (run_dir / "tables").mkdir(exist_ok=True)
    out = []
    for name, text in files.items():
        path = run_dir / "tables" / name
        path.write_text(text, encoding="utf-8")
        out.append(path)
    return out


def _parse_items(
    model: type[Table] | type[Plot] | type[Knee] | type[Paragraph], items: Any, what: str, problems: list[str]
) -> list[Any]:
    out = []
    for i, item in enumerate(items or []):
        try:
            out.append(model.model_validate(item))
        except ValidationError as exc:
            problems.append(f"{what}[{i}]: invalid: {exc.errors()[0]['msg']}")
    return out


def render_all(run_dir: Path) -> list[Path]:
    """Write tables/<name>.csv and .md, derived.json and its tables (with `derived:`), plots/<name>.png and
    report.html; return the paths written.

    Reads only manifest.json, tidy.csv and summary.json. A table or plot that cannot be drawn (e.g. it
    names an axis the sweep lacks) is left out with a warning, logged and shown in the report.
    """
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    spec = manifest.get("spec") or {}
    axes = list((spec.get("sweep") or {}).keys())
    problems: list[str] = []
    rows: list[dict[str, Any]] = []
    if (run_dir / TIDY).exists():
        rows = read_tidy(run_dir / TIDY, axes)
    else:
        problems.append(f"{TIDY} is missing: no measurements to show")
    summary: dict[str, Any] | None = None
    if (run_dir / SUMMARY).exists():
        summary = load_json(run_dir / SUMMARY)
    else:
        problems.append(f"{SUMMARY} is missing: validity and checks unknown")
    sweep = Sweep.from_manifest(manifest, rows)
    written: list[Path] = []

    tables: list[TableData] = []
    for t in _parse_items(Table, spec.get("tables"), "tables", problems):
        try:
            until = spec.get("repetitions") if isinstance(spec.get("repetitions"), dict) else None
            data = TableData.build(t, sweep, rows, load_for_run(run_dir, manifest, t),
                                   (summary or {}).get("repetitions"), until)  # fmt: skip
        except ValueError as exc:
            problems.append(f"table {t.name}: {exc}")
            continue
        tables.append(data)
        written += _write_tables(run_dir, {f"{t.name}.csv": data.csv_text(), f"{t.name}.md": data.markdown_text()})

    for k in _parse_items(Knee, spec.get("knees"), "knees", problems):
        try:
            data = KneeData.build_knee(k, sweep, rows)
        except ValueError as exc:
            problems.append(f"knee {k.name}: {exc}")
            continue
        tables.append(data)
        written += _write_tables(run_dir, {f"{k.name}.csv": data.csv_text(), f"{k.name}.md": data.markdown_text()})

    plot_specs = _parse_items(Plot, spec.get("plots"), "plots", problems)
    derived, files = _derived(run_dir, spec, sweep, rows, plot_specs, problems)
    written += files
    derived_tables: list[DerivedTable] = derived.tables() if spec.get("derived") else []

    plots: list[tuple[Plot, bytes]] = []
    raw: list[dict[str, Any]] | None = None
    for p in plot_specs:
        try:
            if p.kind in ("ccdf", "series"):
                if raw is None:
                    raw = read_raw(run_dir / RAW) if (run_dir / RAW).exists() else []
                png = raw_plot_png(p, sweep, raw)
            elif p.kind == "scatter":
                png = scatter_png(p, derived)
            else:
                png = plot_png(p, sweep, rows)
        except ValueError as exc:
            problems.append(f"plot {p.name}: {exc}")
            continue
        plots.append((p, png))
        path = run_dir / "plots" / f"{p.name}.png"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(png)
        written.append(path)
    try:
        timeline = fault_timeline_png(run_dir, sweep.point_labels)
    except (OSError, ValueError, KeyError) as exc:
        problems.append(f"fault timeline: {exc}")
        timeline = None
    if timeline is not None:
        png, caption = timeline
        plots.append((Plot(name="fault_timeline", title=caption, x="time", y=["latency_seconds"]), png))
        path = run_dir / FAULT_TIMELINE
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(png)
        written.append(path)

    discussion: list[Filled] = fill(_parse_items(Paragraph, spec.get("discussion"), "discussion", problems), tables,
                                    derived if spec.get("derived") else None)  # fmt: skip
    if discussion:
        path = run_dir / DISCUSSION_MD
        path.write_text(markdown(manifest.get("experiment", ""), manifest.get("run_id", ""), discussion), "utf-8")
        written.append(path)

    for msg in problems:
        log.warning("%s: %s", run_dir, msg)
    comparison = None
    if (saved := run_dir / COMPARE_DIR / "compare.json").exists():
        try:
            comparison = load_json(saved)
        except ResultsError as exc:
            problems.append(f"comparison with the reference: {exc}")
    labs = [(p.stem, p.read_bytes()) for p in sorted((run_dir / "labs").glob("*.svg"))]
    html = report_html(manifest, summary, tables, plots, sweep, problems, comparison, labs, derived_tables, discussion)
    path = run_dir / REPORT
    path.write_text(html, encoding="utf-8")
    written.append(path)
    return written
