"""The host side of a link stitched between two testbed hosts (protolab.placement, issue 18).

On each of the two hosts the link's node is linked to a bridge of its own (placement.stitch_bridge) that also holds
a VXLAN device: VNI one per link, the other host's underlay address as its only remote (no learning, no
multicast), the UDP port the inventory names. Frames of at most the stitch's MTU (the underlay's less 50 octets)
cross; so that no larger one is dropped without a word inside the tunnel, the node's interface, the bridge port
and the VXLAN device all get that MTU. The shaper and impairments of the link stay on the node's veth, as on
any link (rates on both ends, impairments where the packets are: placement.split).

Every command can run inside a network namespace (`ns`): an emulated testbed host on one machine.
"""

from __future__ import annotations

from collections.abc import Sequence

from .shell import run
from .topo import VxlanEnd


def vxlan_name(vni: int) -> str:
    return f"vx{vni}"


def _in(ns: str | None, cmd: Sequence[str], pid: int | None = None) -> list[str]:
    if pid is not None:  # a container's namespace, by a process in it
        return ["nsenter", "-t", str(pid), "-n", *cmd]
    return (["ip", "netns", "exec", ns] if ns else []) + list(cmd)


def attach(bridge: str, end: VxlanEnd, ns: str | None = None) -> str:
    """Make `end`'s VXLAN device, join it to `bridge` with the stitch's MTU and bring it up; its name."""
    dev = vxlan_name(end.vni)
    run(_in(ns, ["ip", "link", "add", dev, "type", "vxlan", "id", str(end.vni), "local", end.local,
                 "remote", end.remote, "dstport", str(end.port), "nolearning"]))  # fmt: skip
    run(_in(ns, ["ip", "link", "set", dev, "mtu", str(end.mtu)]))
    run(_in(ns, ["ip", "link", "set", dev, "master", bridge, "up"]))
    return dev


def set_mtu(interfaces: Sequence[str], mtu: int, ns: str | None = None, pid: int | None = None) -> None:
    """The stitch's MTU on a bridge port or a node's interface (`ns`: a named namespace; `pid`: a process's)."""
    for i in interfaces:
        run(_in(ns, ["ip", "link", "set", "dev", i, "mtu", str(mtu)], pid))


def detach(end: VxlanEnd, ns: str | None = None) -> None:
    run(_in(ns, ["ip", "link", "del", vxlan_name(end.vni)]), check=False)
