"""The lab commands of the CLI (protolab.lab.keeper does the work): deploy, destroy, inspect, exec, graph, capture,
impair, check."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

EXAMPLES = {
    "deploy": "protolab deploy triangle            # mininet-topologies/triangle.yaml\n"
    "  protolab deploy triangle --emulate-hosts a,b   # over two testbed hosts emulated here\n"
    "  protolab deploy my-net.yaml --node-filter 'h*,r1'\n"
    "  protolab deploy switched --param hosts=4 --param rate=10Mbit\n"
    "  protolab deploy link-fidelity        # an experiment's topology, nodes and impairments",
    "destroy": "protolab destroy",
    "inspect": "protolab inspect\n  protolab inspect --format json | jq '.links'",
    "exec": "protolab exec h1 -- ping -c 3 10.0.3.2\n  protolab exec --all -- ip -br addr",
    "graph": "protolab graph                       # the deployed lab, as dot on stdout\n"
    "  protolab graph triangle --format svg -o triangle.svg\n  protolab graph --format mermaid",
    "place": "protolab place                       # the hosts of ansible/inventory/local.yml\n"
    "  protolab place triangle --inventory my-hosts.yml",
    "capture": "protolab capture r1-r2 -w r1r2.pcap --count 100 --filter icmp\n"
    "  protolab capture h1:h1-eth0 -w - | wireshark -k -i -",
    "impair": "protolab impair set r1-r2 --delay 135ms --loss 1% --direction forward\n  protolab impair clear r1-r2",
    "check": "protolab check                       # measure every impaired direction now\n"
    "  protolab check --family ipv6          # the same over the nodes' IPv6 addresses",
}


def _parser(sub: Any, name: str, help_: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help_, description=f"{help_}\n\nexamples:\n  {EXAMPLES[name]}",
                          formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip


def _link(s: str) -> tuple[str, str]:
    a, sep, b = s.partition("-")
    if not sep or not a or not b:
        raise argparse.ArgumentTypeError(f"{s!r}: a link is NODE-NODE, e.g. r1-r2")
    return a, b


def need_root(what: str) -> None:
    if os.geteuid() != 0:
        sys.exit(f"protolab {what}: needs root (Mininet, tc and Docker); run it with sudo or as root")


def cmd_deploy(a: argparse.Namespace) -> int:
    from .lab import keeper

    need_root("deploy")
    filt = [p for item in a.node_filter for p in item.split(",") if p]
    emulate = emulated_hosts(a, "deploy")
    if a.inventory or emulate:
        from .lab import supervise

        st = supervise.start_supervised({"source": a.source, "params": keeper.parse_params(a.param),
                                        "node_filter": filt, "inventory": a.inventory, "emulate": emulate,
                                        "cpus": a.host_cpus, "ssh": a.over_ssh})  # fmt: skip
        print(supervise.supervised_text(st))
    else:
        st = keeper.deploy(keeper.Request(a.source, keeper.parse_params(a.param), filt, a.backend))
        print(keeper.inspect_text(st))
    print(f"\nup in {st['deploy_seconds']} s. `protolab exec NODE -- CMD`, `protolab inspect`, `protolab destroy`.",
          file=sys.stderr)  # fmt: skip
    return 0


def cmd_destroy(_a: argparse.Namespace) -> int:
    from .lab import keeper, supervise

    need_root("destroy")
    if (multi := supervise.load_supervised()) is not None:
        failures = supervise.stop_supervised()
        for f in failures:
            print(f"left: {f} (`protolab clean` removes it)", file=sys.stderr)
        print(f"destroyed lab {multi['name']} ({multi['run']}) over {', '.join(multi['parts'])}")
        return 1 if failures else 0
    st = keeper.need_state()
    failures = keeper.destroy()
    for f in failures:
        print(f"left: {f} (`protolab clean` removes it)", file=sys.stderr)
    print(f"destroyed lab {st['name']} ({st['lab']})")
    return 1 if failures else 0


def cmd_inspect(a: argparse.Namespace) -> int:
    from .lab import keeper, supervise

    if (multi := supervise.load_supervised()) is not None:
        print(json.dumps(multi, indent=1) if a.format == "json" else supervise.supervised_text(multi))
        return 0
    st = keeper.request("inspect")["state"]
    print(json.dumps(st, indent=1) if a.format == "json" else keeper.inspect_text(st))
    return 0


def cmd_exec(a: argparse.Namespace) -> int:
    from .lab import keeper, supervise

    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if a.all and a.node:  # `exec --all -- CMD ...`: argparse took CMD for the node
        cmd = [a.node, *cmd]
    if not cmd:
        raise SystemExit("protolab exec: give a command after --, e.g. protolab exec h1 -- ip addr")
    if (multi := supervise.load_supervised()) is not None:
        if a.all:
            raise SystemExit("protolab exec --all: not for a lab over several hosts yet; name the node")
        return supervise.supervised_exec(multi, a.node or "", cmd, tty=sys.stdin.isatty())
    return keeper.exec_cmd(None if a.all else a.node, cmd, all_nodes=a.all)


def cmd_graph(a: argparse.Namespace) -> int:
    from . import graph
    from .lab import keeper

    t, imps = keeper.graph_source(a.source, keeper.parse_params(a.param))
    text = graph.to_mermaid(t, imps) if a.format == "mermaid" else graph.to_dot(t, imps)
    data = graph.render(text, a.format) if a.format in ("svg", "png", "pdf") else text.encode()
    if a.out:
        Path(a.out).write_bytes(data)
        print(a.out, file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
    return 0


def _not_over_hosts(what: str) -> None:
    from .lab import supervise

    if supervise.load_supervised() is not None:
        raise SystemExit(f"protolab {what}: not for a lab over several hosts yet (inspect, exec, check and destroy "
                         "are)")  # fmt: skip


def cmd_capture(a: argparse.Namespace) -> int:
    from .lab import keeper

    need_root("capture")
    _not_over_hosts("capture")
    return keeper.capture(a.link, a.write, a.count, a.seconds, a.filter.split())


def cmd_impair(a: argparse.Namespace) -> int:
    from .lab import keeper

    _not_over_hosts("impair")
    if a.action == "clear":
        ans = keeper.request("impair", link=list(a.link), direction=a.direction, clear=True)
    else:
        fields = ("rate", "delay", "jitter", "loss", "duplicate", "reorder", "corrupt")
        given = keeper.impairment_args({k: getattr(a, k) for k in fields})
        if not given:
            raise SystemExit("protolab impair set: give at least one of --rate --delay --jitter --loss ...")
        ans = keeper.request("impair", link=list(a.link), direction=a.direction, at=a.at, set=given)
    a_, b_ = a.link
    for i in ans["configured"]:
        if {i["from"], i["to"]} == {a_, b_}:
            print(f"{i['from']}->{i['to']}: {json.dumps(i['impairment'])} (at the {i['at']})")
    return 0


def cmd_check(a: argparse.Namespace) -> int:
    from .lab import keeper, supervise

    if (multi := supervise.load_supervised()) is not None:
        results = supervise.recheck(multi)
        if not results:
            print("no impaired direction crosses a stitch: nothing to check")
        return 0 if all(r["passed"] for r in results) else 3

    ans = keeper.request("check", family=6 if a.family == "ipv6" else 4)
    for line in ans["lines"] or ["no impaired direction to check (`protolab impair set` adds one)"]:
        print(line)
    return 0 if ans["passed"] else 3


def cmd_place(a: argparse.Namespace) -> int:
    from .lab import keeper
    from .testbed import placement

    inv = placement.load_inventory(a.inventory or placement.DEFAULT_INVENTORY)
    p = None
    if a.source:
        t, _ = keeper.graph_source(a.source, keeper.parse_params(a.param))
        p = placement.place(t, inv)
    if a.format == "json":
        hosts = [h.model_dump() for h in inv.hosts]
        print(json.dumps({"inventory": inv.source, "hosts": hosts, "placement": p.to_json() if p else None}, indent=1))
    else:
        print(placement.describe(inv, p))
    return 0


def add_hosts_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """--inventory, --emulate-hosts and --host-cpus: a lab over several testbed hosts (deploy and run)."""
    p.add_argument("--inventory", metavar="FILE", help="over the testbed hosts of this Ansible inventory (placement "
                   "as `protolab place` shows it; emulated hosts, or hosts reached over SSH)")  # fmt: skip
    p.add_argument("--emulate-hosts", action="append", default=[], metavar="A,B",
                   help="over testbed hosts emulated on this machine (a network namespace, a Docker engine and a "
                   f"Prometheus each, torn down with the {what})")  # fmt: skip
    p.add_argument("--host-cpus", type=float, default=1.0, metavar="N",
                   help="with --emulate-hosts: the cores each host gives to nodes (placement's balance)")  # fmt: skip
    p.add_argument("--over-ssh", action="store_true",
                   help="with --emulate-hosts: each host also runs an sshd and is reached over SSH as a remote host "
                   "is (its keeper, its engine, its commands), not through its namespace")  # fmt: skip


def emulated_hosts(a: argparse.Namespace, command: str) -> list[str]:
    """The names of --emulate-hosts (comma-separated, repeatable); refused beside --inventory."""
    emulate = [h for item in a.emulate_hosts for h in item.split(",") if h]
    if a.inventory and emulate:
        raise SystemExit(f"protolab {command}: --inventory or --emulate-hosts, not both")
    if a.over_ssh and not emulate:
        raise SystemExit(f"protolab {command}: --over-ssh goes with --emulate-hosts (an inventory names its logins)")
    return emulate


def add_parsers(sub: Any) -> None:
    p = _parser(sub, "deploy", "deploy a lab and leave it up: a topology file or name, or an experiment's")
    p.add_argument("source", metavar="FILE|NAME", help="a topology file, a topology in mininet-topologies/ or an "
                   "experiment in experiments/")  # fmt: skip
    p.add_argument("--node-filter", action="append", default=[], metavar="NODES",
                   help="only these containers (names or globs, comma-separated; repeatable)")  # fmt: skip
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a generator's parameter")
    p.add_argument("--backend", choices=["auto", "netem", "fallback"], default="auto", help="impairment backend")
    add_hosts_arguments(p, "lab")
    p.set_defaults(fn=cmd_deploy)
    _parser(sub, "destroy", "tear the deployed lab down").set_defaults(fn=cmd_destroy)
    p = _parser(sub, "inspect", "the deployed lab: nodes, addresses, links, impairments, last self-check")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(fn=cmd_inspect)
    p = _parser(sub, "exec", "run a command in a node of the deployed lab (or in every node)")
    p.add_argument("node", nargs="?", help="the node (omit with --all)")
    p.add_argument("--all", action="store_true", help="every node, each line prefixed with the node's name")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the command")
    p.set_defaults(fn=cmd_exec)
    p = _parser(sub, "graph", "draw a topology: the deployed lab's, or a file's or name's without deploying")
    p.add_argument("source", nargs="?", metavar="FILE|NAME", help="default: the deployed lab")
    p.add_argument("--format", choices=["dot", "mermaid", "svg", "png", "pdf"], default="dot")
    p.add_argument("-o", "--out", help="file to write (default: stdout)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a generator's parameter")
    p.set_defaults(fn=cmd_graph)
    p = _parser(sub, "place", "the testbed hosts of an inventory and where a topology's nodes would run over them")
    p.add_argument("source", nargs="?", metavar="FILE|NAME", help="a topology file or name, or an experiment's "
                   "(default: list the hosts only)")  # fmt: skip
    p.add_argument("--inventory", metavar="FILE", help="an Ansible inventory whose `testbed` group lists the hosts "
                   "(default: ansible/inventory/local.yml, this machine alone)")  # fmt: skip
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a generator's parameter")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(fn=cmd_place)
    p = _parser(sub, "capture", "tcpdump on a link of the deployed lab into a pcap (or a pipe)")
    p.add_argument("link", metavar="LINK", help="NODE-NODE (the container end of that link) or NODE:INTERFACE")
    p.add_argument("-w", "--write", default="-", help="pcap file, or - for stdout (default)")
    p.add_argument("--count", type=int, help="stop after this many packets")
    p.add_argument("--seconds", type=float, help="stop after this long")
    p.add_argument("--filter", default="", help="a tcpdump filter expression, e.g. 'udp port 3000'")
    p.set_defaults(fn=cmd_capture)
    p = _parser(sub, "impair", "change a link's impairments on the deployed lab (recorded in its state)")
    p.add_argument("action", choices=["set", "clear"])
    p.add_argument("link", type=_link, metavar="NODE-NODE")
    p.add_argument("--direction", choices=["both", "forward", "reverse"], default="both",
                   help="forward: the first node to the second")  # fmt: skip
    p.add_argument("--at", choices=["sender", "receiver"], default="sender")
    for name, example in (("rate", "10Mbit"), ("delay", "10ms"), ("jitter", "2ms"), ("loss", "1%"),
                          ("duplicate", "1%"), ("reorder", "5%"), ("corrupt", "0.1%")):  # fmt: skip
        p.add_argument(f"--{name}", help=f"e.g. {example}".replace("%", "%%"))  # argparse formats help with %
    p.set_defaults(fn=cmd_impair)
    p = _parser(sub, "check", "run the self-check on the deployed lab now")
    p.add_argument("--family", choices=["ipv4", "ipv6"], default="ipv4", help="probe the IPv4 or the IPv6 addresses")
    p.set_defaults(fn=cmd_check)
