"""An inventory of this machine taken without protolab's help (test helper): what the kernel, the firewall, the
Docker engine and /run say exists, never what a ledger says protolab made. Two inventories, one before a run and
one after `protolab clean`, must be equal; `differences` lists what was added or removed, section by section.

Counters, statistics, states and other volatile fields (ifindex, handles, link state, byte counts, container
status, mount ids) are normalized away, so an inventory is a set of lines naming things, e.g.
`link plab-s1 bridge`, `tc qdisc ens4 htb 1: root`, `iptables filter -A FORWARD -j DOCKER-USER`,
`container plab-h1 protolab/node`, `mount /run/netns/x nsfs`, `run /run/protolab/owned/<run>.jsonl`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

RUN_GLOBS = ("protolab*",)  # protolab's own folders in /run (state, keepers, a host's Prometheus targets)
PROCESS_RE = re.compile(r"protolab-|mininet:|nsenter|PROTOLAB_")


def _out(argv: list[str]) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"inventory: {' '.join(argv)} failed ({p.returncode}): {p.stderr.strip()[-300:]}")
    return p.stdout


def links() -> set[str]:
    """Root-namespace links: name and kind (`ip -d link`; state, flags and ifindex left out)."""
    out = set()
    for link in json.loads(_out(["ip", "-j", "-d", "link", "show"])):
        kind = (link.get("linkinfo") or {}).get("info_kind", link.get("link_type", ""))
        master = f" master {link['master']}" if link.get("master") else ""
        out.add(f"link {link['ifname']} {kind}{master}")
    return out


def netns() -> set[str]:
    return {f"netns {line.split()[0]}" for line in _out(["ip", "netns", "list"]).splitlines() if line.strip()}


def tc(devices: list[str]) -> set[str]:
    """Qdiscs and filters (egress and ingress) of every root-namespace interface, statistics left out."""
    out = set()
    for q in json.loads(_out(["tc", "-j", "qdisc", "show"]) or "[]"):
        out.add(f"tc qdisc {q.get('dev')} {q.get('kind')} {q.get('handle')} {q.get('parent', 'root')}")
    for dev in devices:
        for where in ([], ["ingress"]):
            p = subprocess.run(["tc", "filter", "show", "dev", dev, *where], capture_output=True, text=True,
                               timeout=60)  # fmt: skip
            if p.returncode != 0:
                continue  # the link went away between the two listings
            for line in p.stdout.splitlines():
                if line.strip() and not line.lstrip().startswith(("Sent", "backlog", "action order")):
                    out.add(
                        f"tc filter {dev} {' '.join(where)} {re.sub(r'(handle|pref) 0x?[0-9a-f:]+ ', '', line.strip())}"
                    )
    return out


def nft() -> set[str]:
    """`nft list ruleset` (every family): each table, chain and rule line under its table, counters and
    handles left out."""
    out, table = set(), ""
    for line in _out(["nft", "list", "ruleset"]).splitlines():
        s = re.sub(r"counter packets \d+ bytes \d+", "counter", line.strip())
        s = re.sub(r"\s*# handle \d+", "", s)
        if s.startswith("table "):
            table = s.rstrip(" {")
            out.add(f"nft {table}")
        elif s and s != "}":
            out.add(f"nft {table} | {s}")
    return out


def xtables() -> set[str]:
    """iptables-save and ip6tables-save: every rule and chain (with its policy), counters and comments out."""
    out = set()
    for tool in ("iptables-save", "ip6tables-save"):
        table = ""
        for line in _out([tool]).splitlines():
            if line.startswith("*"):
                table = line[1:]
            elif line.startswith(":"):
                name, policy = line[1:].split()[:2]
                out.add(f"{tool} {table} chain {name} {policy}")
            elif line.startswith("-"):
                rule = re.sub(r"^\[\d+:\d+\] ", "", line)
                out.add(f"{tool} {table} {rule}")
    return out


def docker() -> set[str]:
    """Every container (any state, no filter), network and volume of the engine."""
    out = {f"container {line}" for line in _out(["docker", "ps", "-a", "--format", "{{.Names}} {{.Image}}"]).split("\n")
           if line}  # fmt: skip
    out |= {f"network {n}" for n in _out(["docker", "network", "ls", "--format", "{{.Name}}"]).split()}
    out |= {f"volume {n}" for n in _out(["docker", "volume", "ls", "--format", "{{.Name}}"]).split()}
    return out


def mounts() -> set[str]:
    """/proc/self/mountinfo: mount point, filesystem type and source (mount ids and options left out)."""
    out = set()
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        point, (fstype, source, *_rest) = left.split()[4], right.split()
        out.add(f"mount {point} {fstype} {source}")
    return out


def modules() -> set[str]:
    try:
        return {f"module {line.split()[0]}" for line in Path("/proc/modules").read_text().splitlines()}
    except FileNotFoundError:
        return {"module (this kernel has no loadable modules)"}


def run_entries() -> set[str]:
    """/run/netns and protolab's folders in /run, every file and folder by name."""
    out = set()
    for pattern in ("netns", *RUN_GLOBS):
        for top in Path("/run").glob(pattern):
            out.add(f"run {top}")
            for dirpath, dirnames, filenames in os.walk(top):
                out |= {f"run {Path(dirpath) / n}" for n in dirnames + filenames}
    return out


def processes() -> set[str]:
    """Processes whose command line or environment names protolab (helpers, node shells, keepers), by command."""
    out, me = set(), os.getpid()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            env = (d / "environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if cmd and (PROCESS_RE.search(cmd) or "PROTOLAB_RUN=" in env) and "pytest" not in cmd:
            out.add(f"process {cmd[:200]}")
    return out


def take() -> dict[str, set[str]]:
    """The whole inventory, by section."""
    link_set = links()
    devices = sorted(line.split()[1].split("@")[0] for line in link_set)
    return {"links": link_set, "netns": netns(), "tc": tc(devices), "nft": nft(), "xtables": xtables(),
            "docker": docker(), "mounts": mounts(), "modules": modules(), "run": run_entries(),
            "processes": processes()}  # fmt: skip


def differences(before: dict[str, set[str]], after: dict[str, set[str]]) -> list[str]:
    """What `after` has that `before` had not (`+ line`) and the reverse (`- line`), every section."""
    out = []
    for section in before:
        out += [f"+ {x}" for x in sorted(after[section] - before[section])]
        out += [f"- {x}" for x in sorted(before[section] - after[section])]
    return out
