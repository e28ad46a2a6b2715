"""protolab: run containerized Mininet experiments and turn them into results folders.

protolab run NAME [--profile quick] [--dry-run] [--keep]   run experiments/NAME.yaml
    [--resume RUN_DIR]                                    ... or carry on an interrupted run
    [--live | --no-live]                                  ... with a live view of the nodes on stderr
                                                          (default: when stderr is a terminal)
protolab validate [NAME ...]                              check specs (all when none named)
protolab spims 'SPEC' [--transport T] [--topology hub]    run a SPIMS specification (seed 004) directly
protolab report RESULTS_DIR                               regenerate tables, plots, report.html
protolab reference update RUN_DIR...                      pool valid runs into experiments/references/
protolab compare RUN_DIR [REFERENCE.json|RUN_DIR2]        per point and column: regressed / unchanged / ...
protolab nightly [NAME ...]                               every experiment's nightly (else quick) profile,
                                                          compared with its reference; index and trend pages
protolab images [--force]                                 build the container images (as needed)
protolab up | down                                        the monitoring stack alone
protolab clean [--check] [--force]                        remove exactly what protolab made here
                                                          (this instance's: see "instances" below)
protolab schema [--check]                                 write (or verify) experiments/schema.json
protolab dashboards [--check]                             write (or verify) dashboards/*.json

a lab to work in (one at a time on a machine; each command's --help has examples):
protolab deploy FILE|NAME [--node-filter h1,r*]          deploy a topology and leave it up
protolab inspect [--format json]                          its nodes, addresses, links, impairments
protolab exec NODE -- CMD | exec --all -- CMD             run a command in a node (or every node)
protolab graph [FILE|NAME] [--format dot|mermaid|svg|png] draw it
protolab place [FILE|NAME] [--inventory FILE]            the testbed hosts, and where a topology's nodes would run
protolab capture NODE-NODE [-w FILE.pcap]                 tcpdump on a link
protolab impair set|clear NODE-NODE [--delay 10ms ...]   change a link's impairments while it is up
protolab check                                            measure the impaired links now
protolab destroy                                          tear it down

instances: the state folder (PROTOLAB_STATE_DIR, default /run/protolab) is one instance; another folder is
another instance, whose Docker names, labels and monitoring ports are its own (protolab.naming), so two
instances run side by side and neither's `clean` touches the other's lab (root-namespace links are machine-wide:
their topologies need different switch names). A state folder another user owns, or anyone may write, is refused.

exit status: 0 success (`run`: a VALID run), 1 error, 2 bad spec or arguments, 3 the run is INVALID
(summary.json says why), 75 another protolab process holds this machine's lab state (its PID and run id
are printed), 130 interrupted by SIGINT/SIGTERM/SIGHUP (the run is INVALID; its measured rows are on disk);
`compare`: 4 when a column regressed or changed significantly and beyond its threshold.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from .cli_lab import add_hosts_arguments, add_parsers, emulated_hosts
from .cli_lab import need_root as _need_root


def cmd_run(a: argparse.Namespace) -> int:
    from . import spec

    profile = a.profile
    if a.resume:
        from .results.store import load_manifest

        profile = profile or load_manifest(Path(a.resume)).get("profile")
    plan = spec.load(spec.find(a.name), profile)
    print(plan.describe(), flush=True)
    emulate = emulated_hosts(a, "run")
    if a.dry_run:
        return 0
    _need_root("run")
    from . import mnlog

    mnlog.quiet()
    from .orchestrator import ExperimentRun

    live = sys.stderr.isatty() if a.live is None else a.live
    return ExperimentRun(plan, results_root=Path(a.results), keep=a.keep, task_timeout_margin=a.task_timeout_margin,
                         resume=Path(a.resume) if a.resume else None, live=live, emulate_hosts=emulate or None,
                         inventory=Path(a.inventory) if a.inventory else None, host_cpus=a.host_cpus,
                         over_ssh=a.over_ssh).run()  # fmt: skip


def cmd_spims(a: argparse.Namespace) -> int:
    """A SPIMS specification run directly: an experiment `spims-adhoc` of one task, written beside its results."""
    import tempfile

    from pydantic import ValidationError

    from . import spec
    from .errors import SpecError
    from .workloads.spims import SpimsTask

    a.transport = a.transport or ["tcp"]
    task = {"kind": "spims", "name": "m", "spec": a.spec, "transport": "${transport}", "initiator": a.initiator,
            "responder": a.responder, "family": a.family, "duration": a.timeout}  # fmt: skip
    try:  # errors before anything is made
        columns = [SpimsTask.model_validate({**task, "transport": t}).columns() for t in a.transport][0]
    except ValidationError as exc:
        raise SpecError("protolab spims: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: "
                        f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors())) from None  # fmt: skip
    doc = {
        "name": "spims-adhoc",
        "description": f"protolab spims {a.spec!r}",
        "seed": {"document": "004", "reproduces": "none (a SPIMS specification run directly)"},
        "topology": {"kind": a.topology, "params": {"hosts": a.hosts, "rate": a.rate}},
        "sweep": {"transport": a.transport},
        "phases": [{"name": "spims", "tasks": [task]}],
        "tables": [{"name": "spims", "title": a.spec, "rows": ["transport"], "columns": columns}],
    }
    with tempfile.TemporaryDirectory(prefix="protolab-spims-") as d:
        path = Path(d) / "spims-adhoc.yaml"
        path.write_text(spec.yaml.safe_dump(doc, sort_keys=False))
        plan = spec.load(path, None)
        print(plan.describe(), flush=True)
        if a.dry_run:
            return 0
        _need_root("spims")
        from . import mnlog

        mnlog.quiet()
        from .orchestrator import ExperimentRun

        return ExperimentRun(plan, results_root=Path(a.results), live=False).run()


def cmd_validate(a: argparse.Namespace) -> int:
    from . import spec

    paths = [spec.find(n) for n in a.names] or sorted(spec.EXPERIMENTS_DIR.glob("*.yaml"))
    for path in paths:
        data = spec.yaml.safe_load(path.read_text()) or {}
        for profile in [None, *sorted(data.get("profiles") or {})]:
            plan = spec.load(path, profile)
            print(f"ok {path.name} profile={profile or '(base)'}: {len(plan.points)} point(s)")
    return 0


def cmd_report(a: argparse.Namespace) -> int:
    from .results import render

    for p in render.render_all(Path(a.dir)):
        print(p)
    return 0


def cmd_reference(a: argparse.Namespace) -> int:
    from .results import compare
    from .results.store import write_json

    ref = compare.build_reference([Path(d) for d in a.runs])
    out = Path(a.out) if a.out else compare.reference_path(compare.REFERENCES_DIR, ref["experiment"], ref["profile"])
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, ref)
    cols = sum(len(p["columns"]) for p in ref["points"])
    print(f"{out}: {len(ref['points'])} point(s), {cols} point x column cell(s) from {len(ref['runs'])} run(s)")
    return 0


def cmd_compare(a: argparse.Namespace) -> int:
    from .errors import EXIT_REGRESSED
    from .results import compare
    from .results.store import load_manifest

    run = Path(a.run)
    if a.against:
        ref = compare.as_reference(Path(a.against))
    else:
        m = load_manifest(run)
        path = compare.reference_path(compare.REFERENCES_DIR, m["experiment"], m.get("profile"))
        if not path.exists():
            print(f"no reference at {path}: make one with `protolab reference update RUN_DIR...`", file=sys.stderr)
            return 1
        ref = compare.load_reference(path)
    c = compare.compare(run, ref, alpha=a.alpha, threshold=a.threshold)
    for p in compare.write(c, Path(a.out) if a.out else run / compare.COMPARE_DIR):
        print(p)
    if not a.out:  # the run's own comparison: its report shows it
        from .results import render_all

        render_all(run)
    print(", ".join(f"{n} {s}" for s, n in c.counts().items() if n) + f" ({c.machine_note})")
    return EXIT_REGRESSED if c.failed() else 0


def cmd_nightly(a: argparse.Namespace) -> int:
    _need_root("nightly")
    from . import nightly, spec
    from .results import compare

    names = a.names or sorted(p.stem for p in spec.EXPERIMENTS_DIR.glob("*.yaml"))
    out = nightly.night_dir(Path(a.results) / "nightly")
    status = nightly.run_all(names, Path(a.results), compare.REFERENCES_DIR, out)
    print(f"nightly: {out / 'index.html'} (trend: {out.parent / 'trend.html'}), exit {status}")
    return status


def cmd_images(a: argparse.Namespace) -> int:
    _need_root("images")
    from . import images

    for ref, iid in images.ensure_all(force=a.force).items():
        print(f"{ref} {iid[:19]}")
    return 0


def cmd_up(_a: argparse.Namespace) -> int:
    _need_root("up")
    import docker

    from . import monitor

    monitor.up(docker.from_env())
    return 0


def cmd_down(_a: argparse.Namespace) -> int:
    _need_root("down")
    from . import monitor, ownership

    with ownership.lab_lock("down"):
        monitor.down()
        failures = ownership.Ledger(ownership.MONITORING_LEDGER).sweep()
    for f in failures:
        print(f"could not remove {f}", file=sys.stderr)
    return 1 if failures else 0


def cmd_clean(a: argparse.Namespace) -> int:
    _need_root("clean")
    from . import cleanup

    if not a.check:
        cleanup.clean(force=a.force)
    left = cleanup.leftovers()
    for item in left:
        print(f"left: {item}")
    if not left:
        print("clean: nothing of protolab's is left on this machine")
    return 1 if left else 0


def cmd_schema(a: argparse.Namespace) -> int:
    import json

    from . import spec

    if a.check:
        current = json.loads(spec.SCHEMA_PATH.read_text()) if spec.SCHEMA_PATH.exists() else None
        if current != json.loads(json.dumps(spec.json_schema(), sort_keys=True)):
            print(f"{spec.SCHEMA_PATH} is stale: run `protolab schema`", file=sys.stderr)
            return 1
        return 0
    spec.write_schema()
    print(spec.SCHEMA_PATH)
    return 0


def cmd_dashboards(a: argparse.Namespace) -> int:
    from . import dashboards

    if a.check:
        problems = dashboards.check()
        for p in problems:
            print(f"{p}: run `protolab dashboards`", file=sys.stderr)
        return 1 if problems else 0
    for path in dashboards.write():
        print(path)
    return 0


EXAMPLES = {  # `protolab CMD --help` ends with these (the lab commands carry theirs in cli_lab)
    "run": "protolab run smoke --profile quick\n  protolab run experiments/my.yaml --dry-run\n"
    "  protolab run link-fidelity --resume results/link-fidelity/20261123T154242Z-1f90\n"
    "  protolab run multihost --emulate-hosts host_a,host_b --host-cpus 4   # over two hosts emulated here",
    "validate": "protolab validate                 # every spec and profile\n  protolab validate smoke link-fidelity",
    "spims": "protolab spims '100 from h1 to h2 bulk_get 1024*1000,' --topology hub --rate 10Mbit\n"
    "  protolab spims '10 rr 32*1000,' --transport tcp --transport quic\n"
    "  protolab spims '10 background: rr 32*1000 | 3 bulk_get 1024*3000,' --dry-run",
    "report": "protolab report results/smoke/20261123T155035Z-ce2b",
    "reference": "protolab reference update results/smoke/RUN1 results/smoke/RUN2",
    "compare": "protolab compare results/smoke/RUN            # with experiments/references/smoke/PROFILE.json\n"
    "  protolab compare results/smoke/RUN results/smoke/OTHER_RUN",
    "nightly": "protolab nightly                  # every experiment\n  protolab nightly ipmc-groups pps-vs-size",
    "images": "protolab images\n  protolab images --force",
    "up": "protolab up                       # prints where Prometheus (and Grafana) answer",
    "down": "protolab down",
    "clean": "protolab clean --check           # list what is left, remove nothing\n  protolab clean",
    "schema": "protolab schema --check",
    "dashboards": "protolab dashboards --check",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="protolab", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run an experiment")
    r.add_argument("name", help="experiment name (experiments/NAME.yaml) or a path to a spec")
    r.add_argument("--profile", default=None, help="profile from the spec (e.g. quick, full)")
    r.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    r.add_argument("--keep", action="store_true", help="leave the last lab and monitoring up (make clean removes them)")
    r.add_argument("--results", default=str(Path(__file__).resolve().parent.parent / "results"), help="results root")
    r.add_argument("--task-timeout-margin", type=float, default=60.0, metavar="SECONDS",
                   help="a phase's tasks still running this many seconds after its duration are hung: the run "
                        "stops as INVALID naming them (default 60)")  # fmt: skip
    r.add_argument("--resume", metavar="RUN_DIR",
                   help="carry on an interrupted run of the same spec (its checks, tables, plots, derived results "
                        "and discussion may have changed): measure what rows.jsonl lacks, and again what the run "
                        "guard invalidated")  # fmt: skip
    r.add_argument("--live", action=argparse.BooleanOptionalAction, default=None,
                   help="a live terminal view on stderr, refreshed every second from Prometheus: per node CPU "
                        "cores, packets/s in and out, delay p99, the active faults, and the run's progress "
                        "(for where Grafana cannot run); default: on when stderr is a terminal, off otherwise "
                        "(e.g. in CI)")  # fmt: skip
    add_hosts_arguments(r, "run")
    r.set_defaults(fn=cmd_run)
    sp = sub.add_parser("spims", help="run a SPIMS specification (seed 004, Appendix B) between two lab hosts")
    sp.add_argument("spec", help="e.g. '100 from h1 to h2 bulk_get 1024*1000,'")
    sp.add_argument("--topology", default="switched", help="a topology generator with hosts and rate (switched)")
    sp.add_argument("--rate", default="100Mbit", help="its link rate, e.g. 10Mbit (100Mbit)")
    sp.add_argument("--hosts", type=int, default=2, help="its hosts h1..hN (2)")
    sp.add_argument("--transport", action="append", default=None, metavar="NAME",
                    help="tcp, tls, udp, quic, mptcp or sctp; repeat for several (tcp)")  # fmt: skip
    sp.add_argument("--initiator", default="h1", help="host of the initiators where the spec has no FROM (h1)")
    sp.add_argument("--responder", default="h2", help="host of the responders where the spec has no TO (h2)")
    sp.add_argument("--family", choices=["ipv4", "ipv6"], default="ipv4")
    sp.add_argument("--timeout", default="600s", help="the whole specification's limit (600s)")
    sp.add_argument("--results", default=str(Path(__file__).resolve().parent.parent / "results"), help="results root")
    sp.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    sp.set_defaults(fn=cmd_spims)
    v = sub.add_parser("validate", help="validate experiment specs")
    v.add_argument("names", nargs="*")
    v.set_defaults(fn=cmd_validate)
    rp = sub.add_parser("report", help="regenerate tables, plots and report.html from a results folder")
    rp.add_argument("dir")
    rp.set_defaults(fn=cmd_report)
    rf = sub.add_parser("reference", help="reference results from valid runs")
    rf_sub = rf.add_subparsers(dest="action", required=True)
    ru = rf_sub.add_parser("update", help="pool runs of one experiment and profile into a reference file",
                           epilog="examples:\n  " + EXAMPLES["reference"],
                           formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ru.add_argument("runs", nargs="+", metavar="RUN_DIR")
    ru.add_argument("--out", help="file to write (default experiments/references/EXPERIMENT/PROFILE.json)")
    ru.set_defaults(fn=cmd_reference)
    cp = sub.add_parser("compare", help="compare a run with its reference (or another run)")
    cp.add_argument("run", metavar="RUN_DIR")
    cp.add_argument("against", nargs="?", metavar="REFERENCE.json|RUN_DIR2",
                    help="default: experiments/references/EXPERIMENT/PROFILE.json")  # fmt: skip
    cp.add_argument("--alpha", type=float, default=0.01,
                    help="significance level of each cell's q (p adjusted by Benjamini-Hochberg; 0.01)")  # fmt: skip
    cp.add_argument("--threshold", type=float, default=0.05, help="practical threshold, share of the mean (0.05)")
    cp.add_argument("--out", help="folder for compare.md/.html/.json (default RUN_DIR/compare)")
    cp.set_defaults(fn=cmd_compare)
    ni = sub.add_parser("nightly", help="run every experiment's nightly profile and compare with the references")
    ni.add_argument("names", nargs="*", help="experiments (default: all)")
    ni.add_argument("--results", default=str(Path(__file__).resolve().parent.parent / "results"), help="results root")
    ni.set_defaults(fn=cmd_nightly)
    im = sub.add_parser("images", help="build container images that are missing or stale")
    im.add_argument("--force", action="store_true")
    im.set_defaults(fn=cmd_images)
    sub.add_parser("up", help="start the monitoring stack").set_defaults(fn=cmd_up)
    sub.add_parser("down", help="stop the monitoring stack").set_defaults(fn=cmd_down)
    c = sub.add_parser("clean", help="remove everything protolab created on this machine")
    c.add_argument("--check", action="store_true", help="only list leftovers (exit 1 if any)")
    c.add_argument("--force", action="store_true",
                   help="also while a live run holds the lab state: removes that run's lab under it")  # fmt: skip
    c.set_defaults(fn=cmd_clean)
    s = sub.add_parser("schema", help="write experiments/schema.json")
    s.add_argument("--check", action="store_true", help="fail if the committed schema is stale")
    s.set_defaults(fn=cmd_schema)
    d = sub.add_parser("dashboards", help="write dashboards/*.json (Grafana) from protolab.dashboards")
    d.add_argument("--check", action="store_true", help="fail if the committed dashboards are stale")
    d.set_defaults(fn=cmd_dashboards)
    add_parsers(sub)
    for name, example in EXAMPLES.items():
        sub.choices[name].epilog = "examples:\n  " + example
        sub.choices[name].formatter_class = argparse.RawDescriptionHelpFormatter
    a = ap.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if a.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    from . import naming
    from .errors import EXIT_ERROR, ProtolabError, SpecError

    given = os.environ.get(naming.INSTANCE_ENV)
    try:
        naming.adopt_instance()  # before anything is named or started: children inherit it
    except ValueError as exc:
        print(f"protolab {a.command}: {exc}", file=sys.stderr)
        return SpecError.exit_status
    try:
        return a.fn(a)
    except SpecError as exc:  # it names the file and the field already
        print(exc, file=sys.stderr)
        return exc.exit_status
    except ProtolabError as exc:
        print(f"protolab {a.command}: {exc}", file=sys.stderr)
        return exc.exit_status
    except Exception as exc:  # not one of ours: a message, and the traceback only when asked for
        if a.verbose:
            raise
        print(f"protolab {a.command}: {type(exc).__name__}: {exc} (-v shows where)", file=sys.stderr)
        return EXIT_ERROR
    finally:  # main() called in a process that goes on (tests): its environment as it was
        if given is None:
            os.environ.pop(naming.INSTANCE_ENV, None)


if __name__ == "__main__":
    sys.exit(main())
