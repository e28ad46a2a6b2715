"""Experiment specs: YAML in experiments/, parsed -> resolved per sweep point -> validated -> planned.

A spec names the seed table it reproduces, a topology (kind + parameters), node images, workload phases,
sweep axes, repetitions, a random seed, measurements, tables, plots, checks and derived results (sums, ratios
and fits across points). Profiles (`quick`, `full`, ...) are partial specs deep-merged over the base. Any string
value may reference a sweep axis as `${axis}` (or `${axis.key}` for axes whose values are mappings); each sweep
point is substituted and validated on its own, so an error names the file, the field, the reason and the
point. Bounds: at most MAX_SWEEP_POINTS points (checked before expanding), MAX_FAULT_EVENTS_PER_PHASE fault
events per phase, and a table's `reference` names a CSV inside experiments/seed-tables/.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

import yaml
from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from . import topo, topofile
from .errors import SpecError as SpecError  # raised here; callers may import it from errors
from .model.base import COLUMN_RE, NAME_RE, Strict, axis_str
from .model.faults import MAX_FAULT_EVENTS_PER_PHASE, Fault, no_path_spans
from .model.impairment import LinkImpairment
from .model.report import (
    EXPERIMENTS_DIR,
    Check,
    Derived,
    Knee,
    Paragraph,
    Plot,
    Table,
    discussion_problems,
    resolve_reference,
)
from .model.topology import TopologyDef
from .model.types import ImageRef, SafeName
from .units import Bytes, Seconds, format_duration
from .workloads import TASK_MODELS

SCHEMA_PATH = EXPERIMENTS_DIR / "schema.json"
MAX_SWEEP_POINTS = 10_000  # the sweep's cartesian product, checked before it is expanded
MAX_SPEC_NODES = 100_000  # values in a spec file as parsed (YAML aliases counted each time they are used)
MAX_SPEC_DEPTH = 100
MAX_TASK_NAME = 64


class Seed(Strict):
    """Which seed document and table/figure this experiment reproduces (null for platform checks)."""

    document: str | None = Field(None, description="seed file id in shared/seeds, e.g. '003'")
    reproduces: str = Field(..., description="table or figure, e.g. 'Table 4-1', or why none")


class TopologySpec(Strict):
    """A built-in kind with its parameters, a topology file, or the topology inline (nodes, links, segments)."""

    kind: str | None = Field(
        None,
        description="a built-in topology: a generator in mininet-topologies/ (hub, switched, dual_homed, "
        "converter_lan) or a file there by name",
    )
    params: dict[str, Any] = Field(default_factory=dict, description="a generator's own parameters")
    file: str | None = Field(
        None, description="a topology file (YAML): relative to the spec's folder, or a name in mininet-topologies/"
    )
    define: TopologyDef | None = Field(
        None, description="the topology itself; written inline as topology: {nodes, links, segments}, or read from file"
    )
    ipv6: bool | None = Field(
        None,
        description="IPv6 beside IPv4 on every lab interface (fd00:: twins of the IPv4 addresses); "
        "null: the topology file's setting, else true",
    )

    receive_cpu: Literal["node", "in_context"] = Field(
        "node",
        description="whose CPU a node's kernel receive work is charged to: `node` (threaded NAPI on every node "
        "interface, its kthread in the node's cgroup: the receiver pays for its own stack, under its CPU budget) or "
        "`in_context` (the kernel's default here: softirq charged to whatever task runs, often the sender)",
    )

    @model_validator(mode="before")
    @classmethod
    def _inline_or_file(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        inline = {k: data.pop(k) for k in list(data) if k in TopologyDef.model_fields and k not in cls.model_fields}
        if inline:
            data["define"] = inline
        kind = data.get("kind")
        if isinstance(kind, str) and kind not in topo.load_all().names() and kind in topofile.builtin_files():
            data["file"], data["kind"] = str(topofile.builtin_files()[kind]), None
        if data.get("file") and data.get("define") is None:
            spec_dir = (info.context or {}).get("spec_dir")
            path = topofile.find(str(data["file"]), spec_dir)
            data["file"] = str(path)
            data["define"] = topofile.parse(topofile.read_yaml(path), str(path))  # errors name the file
        return data

    @model_validator(mode="after")
    def _known_and_valid(self) -> TopologySpec:
        if (self.kind is None) == (self.define is None):
            raise ValueError("give a `kind` (with params), a `file`, or the topology inline (nodes, links, segments)")
        if self.define is not None:
            if self.params:
                raise ValueError("params: only a generator kind takes params; a topology file is the topology")
            self.build()  # names, segments, addresses: errors before anything is created
            return self
        kind = topo.load_all().get(self.kind)  # UnknownKindError lists the known ones
        try:
            kind.params.model_validate(self.params)
        except ValidationError as exc:
            why = "; ".join(
                f"params.{'.'.join(str(x) for x in e['loc'])}: {e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors()
            )
            raise ValueError(why) from None
        return self

    @property
    def name(self) -> str:
        return self.kind if self.kind is not None else self.define.name  # type: ignore[union-attr]

    def describe(self) -> str:
        if self.kind is not None:
            return f"{self.kind} {self.params}"
        return f"{self.name} ({self.file or 'inline'})"

    def build(self) -> topo.Topology:
        """The topology this spec names, resolved (a generator's output, or the file's nodes, links, segments)."""
        if self.define is None:
            t = topo.build(self.kind or "", self.params)
        else:
            try:
                t = topofile.resolve(self.define, self.file or "topology")
            except SpecError as exc:
                raise ValueError(str(exc)) from None
            t.source = self.file
        if self.ipv6 is not None:
            t.ipv6 = self.ipv6
        t.receive_cpu = self.receive_cpu
        return t


class NodeSpec(Strict):
    image: ImageRef = Field("protolab/node", description="container image (built by `make images`)")
    cpus: float | None = Field(None, gt=0, description="CPU budget in cores (cgroup quota); null = none")
    command: list[str] | None = Field(
        None, description="arguments for the image's entrypoint (the agent); null = the image's default"
    )
    # -- least privilege (issue "Trust"): the container's limits; null = protolab.lab's defaults --
    memory: Bytes | None = Field(None, ge=64 * 2**20, description="memory limit, socket buffers included, e.g. "
                                 "'2048MiB'; null = 1024MiB")  # fmt: skip
    pids: int | None = Field(None, ge=64, description="limit on the container's tasks (threads count); null = 1024")


if TYPE_CHECKING:  # the union is built from the registry at run time; to the type checker, any task model
    from .workloads.base import TaskModel as Task
else:
    Task = Annotated[Union[tuple(TASK_MODELS.values())], Field(discriminator="kind")]  # noqa: UP007


def node_settings(
    t: topo.Topology, nodes: dict[str, NodeSpec]
) -> tuple[dict[str, str], dict[str, float | None], dict[str, list[str] | None]]:
    """Each container's image, CPU budget and command: what the spec's entry for the node sets, else what the
    topology gives the node (a file's image and cpus), else the spec's `default` entry."""
    default = nodes.get("default") or NodeSpec()
    images, cpus, commands = {}, {}, {}
    for h in t.hosts:
        own = nodes.get(h.name)
        given = own.model_fields_set if own else set()
        images[h.name] = own.image if own and "image" in given else h.image or default.image
        cpus[h.name] = own.cpus if own and "cpus" in given else h.cpus if h.cpus is not None else default.cpus
        commands[h.name] = own.command if own and "command" in given else default.command
    return images, cpus, commands


def node_limits(t: topo.Topology, nodes: dict[str, NodeSpec]) -> dict[str, dict[str, int | None]]:
    """Each container's memory and pids limits: the spec's entry for the node, else its `default` entry (None:
    protolab.lab's defaults)."""
    default = nodes.get("default") or NodeSpec()
    return {h.name: {k: getattr(nodes.get(h.name), k, None) or getattr(default, k) for k in ("memory", "pids")}
            for h in t.hosts}  # fmt: skip


def _holding(task: Strict, node: str) -> str:
    """', <field>' of the task's field(s) that name `node` (for an error), or ''."""
    fields = [k for k, v in task if v == node or (isinstance(v, (list, tuple)) and node in v)]
    return ", " + ", ".join(fields) if fields else ""


class Phase(Strict):
    name: str = Field(..., pattern=NAME_RE, max_length=64)
    tasks: list[Task] = Field(..., min_length=1, description="run in parallel; the phase ends with the last")
    faults: list[Fault] = Field(
        default_factory=list, description="timed link and node faults, relative to the phase start"
    )
    max_no_path: Seconds = Field(
        1.0,
        description="the plan warns when the faults leave a task's hosts no whole path for longer than this "
        "(flaps and 100 % loss steps included), e.g. '1s'",
    )

    @model_validator(mode="after")
    def _unique_task_names(self) -> Phase:
        names = [t.name for t in self.tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"task names repeat in phase {self.name}: {names}")
        for t in self.tasks:
            if len(t.name) > MAX_TASK_NAME:  # a column prefix, and part of its helpers' file and process names
                raise ValueError(f"phase {self.name}, task {t.name[:20]}...: name is {len(t.name)} characters; at most "
                                 f"{MAX_TASK_NAME}")  # fmt: skip
            if not (t.duration > 0 and math.isfinite(t.duration)):
                raise ValueError(f"phase {self.name}, task {t.name}: duration must be a finite time longer than 0s")
        if not (self.max_no_path >= 0 and math.isfinite(self.max_no_path)):
            raise ValueError(f"phase {self.name}: max_no_path must be a finite time of 0s or more, e.g. '1s'")
        return self

    @property
    def seconds(self) -> float:
        """The phase's length: its longest task (what fault times are checked against)."""
        return max(t.duration for t in self.tasks)


class Measurement(Strict):
    """A column of the tidy table taken from Prometheus over each phase's measurement window."""

    name: str = Field(..., pattern=COLUMN_RE, max_length=64, description="column prefix; the unit is appended")
    kind: Literal["interface_rate", "cpu"] = "interface_rate"
    node: SafeName
    interface: SafeName | None = Field(None, description="interface_rate: e.g. h1-eth0")
    direction: Literal["rx", "tx"] = "rx"
    unit: Literal["bits", "packets"] = "bits"
    phase: str | None = Field(None, description="only this phase's window (default: the mean over all phases)")

    @model_validator(mode="after")
    def _needs_interface(self) -> Measurement:
        if self.kind == "interface_rate" and not self.interface:
            raise ValueError("interface_rate needs an interface")
        return self

    @property
    def column(self) -> str:
        if self.kind == "cpu":
            return f"{self.name}_cpu_ratio"
        return f"{self.name}_{self.unit}_per_second"


MAX_REPETITIONS = 1000


class RepeatUntil(Strict):
    """Repeat a point until the normalized standard deviation of its mean, sd / (|mean| * sqrt(n)), is below
    `until_nsd` for every watched column, or `max` repetitions (SPIMS, sec. 7 and Appendix C)."""

    until_nsd: float = Field(..., gt=0, lt=1, description="bound on sd / (|mean| sqrt(n)), e.g. 0.05")
    min: int = Field(3, ge=2, le=MAX_REPETITIONS, description="repetitions before the first look")
    max: int = Field(20, ge=2, le=MAX_REPETITIONS, description="give up (not converged) after this many")
    columns: list[str] | None = Field(
        None, description="columns watched (default: every measured column whose mean is not zero)"
    )

    @model_validator(mode="after")
    def _order(self) -> RepeatUntil:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")
        return self

    def nsd_of_mean(self, values: list[float]) -> float | None:
        """sd / (|mean| sqrt(n)) of the values; None without two values or with a zero mean."""
        if len(values) < 2:
            return None
        m = sum(values) / len(values)
        if m == 0:
            return None
        sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))
        return sd / (abs(m) * math.sqrt(len(values)))


class Experiment(Strict):
    """One experiment, fully resolved for one sweep point (no ${...} left)."""

    name: str = Field(..., pattern=NAME_RE, max_length=64, description="also its results folder's name")
    description: str
    seed: Seed
    topology: TopologySpec
    nodes: dict[SafeName, NodeSpec] = Field(
        default_factory=lambda: {"default": NodeSpec()},
        description="node name -> image and CPU budget; 'default' applies to nodes not listed",
    )
    sweep: dict[str, list[Any]] = Field(default_factory=dict, description="axis -> values (cartesian product)")
    skip: list[dict[str, Any]] = Field(
        default_factory=list,
        description="combinations of the sweep left out: each entry some axes' values (e.g. {topology: hub, rate: "
        "100Mbit}); a point with every value of an entry is not measured (named settings by their name)",
    )
    repetitions: int | RepeatUntil = Field(
        1, description="how often each point is measured: a count, or until its mean is stable (RepeatUntil)"
    )
    random_seed: int = 1
    order: Literal["shuffled", "sweep"] = Field(
        "shuffled",
        description="measurements of each lab in a seeded random order (random_seed, recorded in the manifest) so "
        "that a drift of the machine does not alias with a sweep axis; 'sweep': in sweep order",
    )
    settle: Seconds = Field(1.0, description="pause before each measurement")
    warmup: Seconds = Field(1.0, description="start of each phase left out of the measurement window")
    impairments: list[LinkImpairment] = Field(
        default_factory=list, description="per link and direction, beyond the topology's link rates"
    )
    self_check: bool = Field(
        True, description="before the workload, measure each impaired link's rate, delay and loss (see docs)"
    )
    impairment_backend: Literal["auto", "netem", "fallback"] = Field(
        "auto", description="auto: netem where the kernel has sch_netem, else the fallback"
    )
    phases: list[Phase] = Field(..., min_length=1)
    measurements: list[Measurement] = Field(default_factory=list)
    tables: list[Table] = Field(default_factory=list)
    knees: list[Knee] = Field(default_factory=list, description="throughput-collapse tables (see Knee)")
    plots: list[Plot] = Field(default_factory=list)
    checks: list[Check] = Field(default_factory=list)
    derived: Derived = Field(
        default_factory=Derived, description="results that combine sweep points: sums, ratios and fits (see Derived)"
    )
    discussion: list[Paragraph] = Field(
        default_factory=list,
        description="paragraphs for the report (e.g. what differs from the seed, and why) whose {{...}} figures "
        "are filled in from the run's own tables, seed tables and derived results (see Paragraph)",
    )
    profiles: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="name -> partial spec merged over this one (quick, full, ...)"
    )

    @field_validator("sweep")
    @classmethod
    def _axes(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for axis, values in v.items():
            if not re.fullmatch(COLUMN_RE, axis):
                raise ValueError(f"axis name {axis!r} must match {COLUMN_RE}")
            if not values:
                raise ValueError(f"axis {axis!r} has no values")
        return v

    @model_validator(mode="after")
    def _cross_refs(self) -> Experiment:
        t = self.topology.build()
        nodes = set(t.node_names())
        for n in self.nodes:
            if n != "default" and n not in nodes:
                raise ValueError(f"nodes: {n!r} is not a node of topology {self.topology.name} ({sorted(nodes)})")
        hosts = {h.name for h in t.hosts}
        intfs = t.interfaces()
        for phase in self.phases:
            for task in phase.tasks:
                for n in task.nodes():
                    if n not in hosts:
                        raise ValueError(f"phase {phase.name}, task {task.name}{_holding(task, n)}: {n!r} is not a "
                                         f"host ({sorted(hosts)})")  # fmt: skip
                if task.address_family() == 6 and not t.ipv6:
                    raise ValueError(f"phase {phase.name}, task {task.name}: family ipv6, but the topology has "
                                     "ipv6: false")  # fmt: skip
                link_rate = getattr(task, "link_rate", None)  # a transfer's efficiency is over this link speed
                sat = [lk.rate_bps for lk in t.links if lk.segment == "satellite" and lk.rate_bps]
                if link_rate and sat and abs(link_rate - sat[0]) > 1e-3 * sat[0]:
                    raise ValueError(f"phase {phase.name}, task {task.name}: link_rate {link_rate / 1e3:g} kbit/s, "
                                     f"but the topology's satellite link runs at {sat[0] / 1e3:g} kbit/s (efficiency "
                                     "is user octets over the link's octets per second)")  # fmt: skip
        linked = t.linked()
        hubs = {sw.name for sw in t.switches if sw.mode == "hub"}
        for i, imp in enumerate(self.impairments):
            if tuple(imp.link) not in linked:
                raise ValueError(f"impairments.{i}: no link between {imp.link[0]} and {imp.link[1]} in {t.kind}")
            if why := imp.hub_conflict(hubs):
                raise ValueError(f"impairments.{i}: {why}")
        for phase in self.phases:
            for i, f in enumerate(phase.faults):
                if f.node is not None:
                    if f.node not in hosts:
                        raise ValueError(f"phase {phase.name} faults.{i}: node {f.node!r} is not a host of {t.kind}"
                                         f" ({sorted(hosts)}); node faults act on a host's container")  # fmt: skip
                elif tuple(f.link) not in linked:
                    raise ValueError(f"phase {phase.name} faults.{i}: no link between {f.link[0]} and {f.link[1]}")
                try:
                    f.check(phase.seconds)
                except ValueError as exc:
                    raise ValueError(f"phase {phase.name} faults.{i}: {exc}") from None
            counts = [f.event_count(phase.seconds) for f in phase.faults]
            if sum(counts) > MAX_FAULT_EVENTS_PER_PHASE:
                each = ", ".join(f"faults.{i} {n}" for i, n in enumerate(counts))
                raise ValueError(
                    f"phase {phase.name}: its faults make {sum(counts)} events ({each}), more than the limit of"
                    f" {MAX_FAULT_EVENTS_PER_PHASE} per phase"
                )
        if isinstance(self.repetitions, int) and not 1 <= self.repetitions <= MAX_REPETITIONS:
            raise ValueError(f"repetitions: {self.repetitions} is not within 1..{MAX_REPETITIONS}")
        if isinstance(self.repetitions, RepeatUntil) and self.repetitions.columns:
            unknown = sorted(set(self.repetitions.columns) - set(self.columns()))
            if unknown:
                raise ValueError(f"repetitions.columns: {unknown} are not columns of this experiment")
        for m in self.measurements:
            if m.phase is not None and m.phase not in {p.name for p in self.phases}:
                raise ValueError(f"measurement {m.name}, phase: no phase {m.phase!r} ({[p.name for p in self.phases]})")
            if m.node not in hosts:
                raise ValueError(f"measurement {m.name}, node: {m.node!r} is not a host")
            if m.interface and m.interface not in intfs[m.node]:
                raise ValueError(
                    f"measurement {m.name}, interface: {m.node} has no {m.interface} (has {intfs[m.node]})"
                )
        return self

    @model_validator(mode="after")
    def _derived_refs(self) -> Experiment:
        """Derived ratios name axes and values of the sweep; derived checks and scatter plots name what exists."""
        problems = self.derived.problems(self.sweep, self.checks, self.plots)
        if problems:
            raise ValueError("derived: " + "; ".join(problems))
        return self

    @model_validator(mode="after")
    def _discussion_refs(self) -> Experiment:
        """The discussion's figures name tables, columns, rows, fits and ratios this spec has."""
        if problems := discussion_problems(self.discussion, self.tables, self.derived, self.sweep):
            raise ValueError("; ".join(problems))
        return self

    def initial_repetitions(self) -> int:
        """Repetitions every point gets; RepeatUntil may add more, one round at a time."""
        return self.repetitions if isinstance(self.repetitions, int) else self.repetitions.min

    def columns(self) -> list[str]:
        """Every measured column of the tidy table, with its unit in its name."""
        cols = [c for phase in self.phases for task in phase.tasks for c in task.columns()]
        cols += [m.column for m in self.measurements]
        if any(phase.faults for phase in self.phases):
            cols += ["fault_timing_error_max_seconds"]
        return cols


@dataclass
class Point:
    """One sweep point: its index, its axis values, and the experiment resolved for it."""

    index: int
    values: dict[str, Any]
    experiment: Experiment

    @property
    def id(self) -> str:
        return f"p{self.index:03d}"

    def topology_key(self) -> str:
        e = self.experiment
        nodes = {k: v.model_dump(mode="json") for k, v in e.nodes.items()}
        impairments = [i.model_dump(mode="json") for i in e.impairments]
        return json.dumps([e.topology.model_dump(mode="json"), nodes, impairments], sort_keys=True)

    def label(self) -> str:
        return ", ".join(f"{k}={_short(v)}" for k, v in self.values.items()) or "(single point)"


@dataclass
class Plan:
    source: Path
    profile: str | None
    raw: dict[str, Any]  # the merged spec (profile applied), before substitution
    points: list[Point]

    @property
    def base(self) -> Experiment:
        return self.points[0].experiment

    def describe(self) -> str:
        e = self.base
        r = e.repetitions
        reps = r if isinstance(r, int) else f"{r.min}..{r.max} (until the nsd of the mean < {r.until_nsd:g})"
        groups = len({p.topology_key() for p in self.points})
        lines = [
            f"experiment {e.name} ({self.source}), profile {self.profile or '(none)'}",
            f"  reproduces: {e.seed.reproduces}" + (f" of seed {e.seed.document}" if e.seed.document else ""),
            f"  {len(self.points)} sweep point(s) x {reps} repetition(s) on {groups} lab deployment(s)",
        ]
        for p in self.points:
            ex = p.experiment
            dur = sum(max(t.duration for t in ph.tasks) for ph in ex.phases)
            lines.append(f"  {p.id}: {p.label()}  topology={ex.topology.describe()}  ~{dur:g}s/rep")
            lines += [f"    WARNING: {w}" for w in no_path_warnings(ex)]
        lines.append(f"  checks: {len(e.checks)}, tables: {len(e.tables)}, plots: {len(e.plots)}")
        return "\n".join(lines)


def no_path_warnings(ex: Experiment) -> list[str]:
    """Tasks whose phase's fault schedule leaves a pair of their hosts no whole path (every path with a link cut
    or at 100 % loss) for longer than the phase's `max_no_path`: the longest such span, and how many there are."""
    t = ex.topology.build()
    lost = {frozenset(i.link) for i in [*t.impairments, *ex.impairments] if (i.loss or 0) >= 1.0}
    out = []
    for phase in ex.phases:
        for task in phase.tasks:
            for pair, paths in task.paths(t).items():
                spans = no_path_spans(phase.faults, paths, phase.seconds, lost)
                a, b = max(spans, key=lambda s: s[1] - s[0], default=(0.0, 0.0))
                if b - a <= phase.max_no_path:
                    continue
                ways = " | ".join(" + ".join(f"{x}-{y}" for x, y in p) for p in paths)
                more = f" (longest of {len(spans)} such spans)" if len(spans) > 1 else ""
                out.append(f"phase {phase.name}: task {task.name} ({pair}) has no path up from {a:g}s to {b:g}s, "
                           f"{b - a:g} s{more}, longer than max_no_path {format_duration(phase.max_no_path)} "
                           f"({'paths' if len(paths) > 1 else 'path'}: {ways})")  # fmt: skip
    return out


def _short(v: Any) -> str:
    if isinstance(v, dict) and isinstance(v.get("name"), str):
        return v["name"]  # an axis of named settings
    return json.dumps(v) if isinstance(v, (dict, list)) else str(v)


_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)\}")


def _lookup(values: dict[str, Any], name: str, path: str) -> Any:
    if name not in values:
        raise SpecError(f"${{{name}{path}}} names no sweep axis (axes: {sorted(values) or 'none'})")
    v = values[name]
    for key in filter(None, path.split(".")):
        if not isinstance(v, dict) or key not in v:
            raise SpecError(f"${{{name}{path}}}: axis {name} value {v!r} has no key {key!r}")
        v = v[key]
    return v


def substitute(obj: Any, values: dict[str, Any]) -> Any:
    """Replace ${axis} references: a whole-string reference keeps the value's type, else it is formatted in."""
    if isinstance(obj, str):
        m = _REF.fullmatch(obj)
        if m:
            return copy.deepcopy(_lookup(values, m.group(1), m.group(2)))
        return _REF.sub(lambda m: str(_lookup(values, m.group(1), m.group(2))), obj)
    if isinstance(obj, list):
        return [substitute(x, values) for x in obj]
    if isinstance(obj, dict):
        return {k: substitute(v, values) for k, v in obj.items()}
    return obj


def _skips(source: Path, raw: Any, sweep: dict[str, list[Any]]) -> list[dict[str, str]]:
    """The spec's `skip` entries as axis -> value string, each checked against the sweep: an entry that names no
    axis, an unknown axis or a value the axis does not have is an error (it would silently skip nothing)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SpecError(f"{source}: skip: must be a list of mappings of axis values")
    out: list[dict[str, str]] = []
    for n, entry in enumerate(raw):
        if not isinstance(entry, dict) or not entry:
            raise SpecError(f"{source}: skip[{n}]: must map one or more sweep axes to a value")
        for axis, value in entry.items():
            if axis not in sweep:
                raise SpecError(
                    f"{source}: skip[{n}]: {axis!r} is not a sweep axis (axes: {', '.join(sweep) or 'none'})"
                )
            have = [axis_str(v) for v in sweep[axis]]
            if axis_str(value) not in have:
                raise SpecError(
                    f"{source}: skip[{n}]: axis {axis} has no value {axis_str(value)!r} ({', '.join(have)})"
                )
        out.append({a: axis_str(v) for a, v in entry.items()})
    return out


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _format_error(source: Path, err: ValidationError, point: str | None) -> str:
    lines = [f"{source}: invalid spec" + (f" (at sweep point {point})" if point else "")]
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"  {loc}: {msg}")
    return "\n".join(lines)


def _too_big(raw: Any) -> str | None:
    """Why a parsed spec cannot be walked (an alias that contains itself, or aliases multiplying into more
    than MAX_SPEC_NODES values), else None. Walks without recursion, stopping at the limit."""
    count, stack = 0, [(raw, ())]
    while stack:
        obj, path = stack.pop()
        count += 1
        if count > MAX_SPEC_NODES:
            return f"more than {MAX_SPEC_NODES} values (each use of a YAML alias counted: aliases of aliases multiply)"
        if isinstance(obj, (dict, list)):
            if id(obj) in path:
                return "a YAML alias contains itself"
            if len(path) >= MAX_SPEC_DEPTH:
                return f"values nested more than {MAX_SPEC_DEPTH} levels deep"
            children = obj.values() if isinstance(obj, dict) else obj
            stack.extend((c, (*path, id(obj))) for c in children)
    return None


def find(name: str, directory: Path = EXPERIMENTS_DIR) -> Path:
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path
    candidate = directory / f"{name}.yaml"
    if candidate.exists():
        return candidate
    known = ", ".join(sorted(p.stem for p in directory.glob("*.yaml")))
    raise SpecError(f"no experiment {name!r} in {directory} (known: {known})")


def load(source: Path | str, profile: str | None = None) -> Plan:
    """Parse, merge the profile, expand the sweep, substitute and validate every point."""
    source = Path(source)
    try:
        raw = yaml.load(source.read_text(), Loader=topofile.UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {exc}") from None
    except RecursionError:
        raise SpecError(f"{source}: not valid YAML: nested too deeply") from None
    except OSError as exc:
        raise SpecError(f"{source}: cannot read: {exc.strerror}") from None
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: the top level must be a mapping of fields")
    if why := _too_big(raw):
        raise SpecError(f"{source}: {why}")
    profiles = raw.get("profiles") or {}
    if profile is not None:
        if not isinstance(profiles, dict) or profile not in profiles:
            known = ", ".join(sorted(profiles)) if isinstance(profiles, dict) else "none"
            raise SpecError(f"{source}: profiles.{profile}: no such profile (known: {known or 'none'})")
        over = profiles[profile] or {}
        if not isinstance(over, dict):
            raise SpecError(f"{source}: profiles.{profile}: must be a mapping of fields")
        if "profiles" in over:
            raise SpecError(f"{source}: profiles.{profile}.profiles: a profile cannot define profiles")
        raw = deep_merge(raw, over)
    sweep = raw.get("sweep") or {}
    if not isinstance(sweep, dict) or not all(isinstance(v, list) and v for v in sweep.values()):
        raise SpecError(f"{source}: sweep: must map each axis name to a non-empty list of values")
    axes = list(sweep)
    size = math.prod(len(sweep[a]) for a in axes)
    if size > MAX_SWEEP_POINTS:
        lengths = ", ".join(f"{a} {len(sweep[a])}" for a in axes)
        raise SpecError(
            f"{source}: sweep: {' x '.join(str(len(sweep[a])) for a in axes)} = {size} points exceeds the limit"
            f" of {MAX_SWEEP_POINTS} (axes: {lengths})"
        )
    skips = _skips(source, raw.get("skip"), sweep)
    points: list[Point] = []
    for i, combo in enumerate(itertools.product(*(sweep[a] for a in axes))):
        values = dict(zip(axes, combo, strict=True))
        if any(all(axis_str(values[a]) == v for a, v in s.items()) for s in skips):
            continue  # the point keeps its index: ids do not move when a skip is added or dropped
        label = ", ".join(f"{k}={_short(v)}" for k, v in values.items())
        body = {k: v for k, v in raw.items() if k not in ("sweep", "profiles")}
        try:
            resolved = substitute(body, values)
        except SpecError as exc:
            raise SpecError(f"{source}: {exc}" + (f" (at sweep point {label})" if label else "")) from None
        resolved["sweep"] = sweep
        resolved["profiles"] = raw.get("profiles") or {}
        try:
            exp = Experiment.model_validate(resolved, context={"spec_dir": source.parent})
        except ValidationError as exc:
            raise SpecError(_format_error(source, exc, label or None)) from None
        for t in exp.tables:
            if t.reference is not None:
                try:
                    resolve_reference(source.parent, t.reference.file)
                except ValueError as exc:
                    where = f" (at sweep point {label})" if label else ""
                    raise SpecError(f"{source}: invalid spec{where}\n  tables: table {t.name}: {exc}") from None
        points.append(Point(i, values, exp))
    if not points and skips:
        raise SpecError(f"{source}: skip: leaves no point of the sweep to measure")
    if points and (unknown := _unknown_derived_columns(points)):
        raise SpecError(f"{source}: invalid spec\n  derived: {unknown}")
    # Deploy each distinct lab once: group points by topology (stable, first appearance first).
    order: dict[str, int] = {}
    for p in points:
        order.setdefault(p.topology_key(), len(order))
    points.sort(key=lambda p: (order[p.topology_key()], p.index))
    return Plan(source=source, profile=profile, raw=raw, points=points)


def _unknown_derived_columns(points: list[Point]) -> str | None:
    """Tidy columns that derived results or scatter plots read but no point measures (tidy.csv has only the
    experiment's columns)."""
    known = {c for p in points for c in p.experiment.columns()}
    e = points[0].experiment
    unknown = sorted(e.derived.columns_used(e.plots) - known)
    if not unknown:
        return None
    return f"{unknown} are not columns of this experiment, derived sums or ratios (columns: {sorted(known)})"


def json_schema() -> dict[str, Any]:
    schema = Experiment.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "protolab experiment"
    return schema


def write_schema(path: Path = SCHEMA_PATH) -> None:
    path.write_text(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")
