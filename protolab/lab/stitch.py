"""The host side of a link stitched between two testbed hosts (protolab.testbed.placement, issue 18).

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

from ..shell import in_netns, run
from ..topo import VxlanEnd


def vxlan_name(vni: int) -> str:
    return f"vx{vni}"


def attach(bridge: str, end: VxlanEnd, ns: str | None = None) -> str:
    """Make `end`'s VXLAN device, join it to `bridge` with the stitch's MTU and bring it up; its name."""
    dev = vxlan_name(end.vni)
    run(in_netns(["ip", "link", "add", dev, "type", "vxlan", "id", str(end.vni), "local", end.local,
                 "remote", end.remote, "dstport", str(end.port), "nolearning"], ns))  # fmt: skip
    run(in_netns(["ip", "link", "set", dev, "mtu", str(end.mtu)], ns))
    run(in_netns(["ip", "link", "set", dev, "master", bridge, "up"], ns))
    return dev


def set_mtu(interfaces: Sequence[str], mtu: int, ns: str | None = None, pid: int | None = None) -> None:
    """The stitch's MTU on a bridge port or a node's interface (`ns`: a named namespace; `pid`: a process's)."""
    for i in interfaces:
        run(in_netns(["ip", "link", "set", "dev", i, "mtu", str(mtu)], ns, pid=pid))


def detach(end: VxlanEnd, ns: str | None = None) -> None:
    run(in_netns(["ip", "link", "del", vxlan_name(end.vni)], ns), check=False)
