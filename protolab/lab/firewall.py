"""The Docker FORWARD-DROP / br_netfilter trap, found and fixed narrowly for the lab's own bridges.

Docker sets the iptables FORWARD policy to DROP; with br_netfilter's `bridge-nf-call-iptables` on, frames
bridged between two ports of *any* Linux bridge traverse that chain, so a Mininet LAN silently loses all
traffic. We neither switch the sysctl off (Docker needs it) nor open FORWARD: one rule per family accepts
only frames bridged within a `plab-*` bridge, tagged with the comment `protolab` so teardown and
`protolab clean` remove exactly it.

The same hand-off has a second effect: where connection tracking is on in the root namespace (Docker's NAT
turns it on), conntrack's defragmenter (IPv4 hook priority -400) reassembles every fragmented datagram bridged
between two lab ports, in the root namespace's reassembly memory. A hub or switch never reassembles, and that
memory (4 MB, `ipfrag_high_thresh`) is shared by every lab: when a congested hub drops single fragments it fills
with incomplete datagrams for `ipfrag_time` (30 s) and then refuses every fragment, so delivery collapses far
below the link and the collapse outlives the measurement. `untrack_bridged` adds one nftables table per lab
(family bridge, prerouting, priority -300: before br_netfilter hands the frame to the IP hooks) that marks
frames entering a lab bridge port (`plab-*`) untracked; the defragmenter and conntrack pass untracked frames by,
so fragments cross the emulated LAN as fragments and the receiving node reassembles them, as a real one does.
"""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..naming import PREFIX, RULE_COMMENT
from ..shell import CommandError, ok, run

if TYPE_CHECKING:
    from ..ownership import Ledger

log = logging.getLogger(__name__)

FAMILIES = {"ipv4": ("iptables", "bridge-nf-call-iptables"), "ipv6": ("ip6tables", "bridge-nf-call-ip6tables")}
_RULE = ["-i", f"{PREFIX}+", "-o", f"{PREFIX}+", "-m", "physdev", "--physdev-is-bridged",
         "-m", "comment", "--comment", RULE_COMMENT, "-j", "ACCEPT"]  # fmt: skip


@dataclass
class FamilyState:
    family: str
    bridge_netfilter: bool  # bridged frames go through this family's FORWARD chain
    forward_policy: str  # ACCEPT / DROP / (unknown)
    chain: str  # where our rule goes: DOCKER-USER when Docker made it, else FORWARD
    rule_present: bool

    @property
    def would_drop(self) -> bool:
        return self.bridge_netfilter and self.forward_policy != "ACCEPT"


def _sysctl(name: str) -> bool:
    path = Path("/proc/sys/net/bridge") / name
    try:
        return path.read_text().strip() == "1"
    except OSError:
        return False  # br_netfilter not loaded: bridged frames skip iptables


def inspect() -> list[FamilyState]:
    states = []
    for family, (tool, sysctl) in FAMILIES.items():
        policy, chain = "(unknown)", "FORWARD"
        try:
            rules = run([tool, "-w", "-S", "FORWARD"]).splitlines()
            policy = next((r.split()[2] for r in rules if r.startswith("-P FORWARD")), policy)
            if ok([tool, "-w", "-S", "DOCKER-USER"]):
                chain = "DOCKER-USER"
        except CommandError:
            pass
        present = ok([tool, "-w", "-C", chain, *_RULE])
        states.append(FamilyState(family, _sysctl(sysctl), policy, chain, present))
    return states


def ensure_bridged_forwarding(ledger: Ledger | None = None) -> list[str]:
    """Add our narrow ACCEPT where bridged lab frames would be dropped (recorded in `ledger` before it is
    added); return what was done."""
    actions = []
    for st in inspect():
        if not st.would_drop or st.rule_present:
            continue
        tool = FAMILIES[st.family][0]
        entry = ledger.add("rule", tool=tool, table="filter", rule=[st.chain, *_RULE]) if ledger else None
        try:
            run([tool, "-w", "-I", st.chain, "1", *_RULE])
        except CommandError as exc:
            if ledger and entry:
                ledger.gone(entry)
            raise RuntimeError(
                f"{st.family}: FORWARD policy is {st.forward_policy} and bridged frames pass through it "
                f"(net.bridge.{FAMILIES[st.family][1]}=1), so lab traffic would be dropped, and adding the "
                f"narrow accept rule failed: {exc}"
            ) from None
        actions.append(
            f"{st.family}: FORWARD policy {st.forward_policy} with bridge netfilter on would drop bridged lab "
            f"frames; inserted an ACCEPT for frames bridged within {PREFIX}* bridges into {st.chain}"
        )
    return actions


UNTRACK_PRIORITY = -300  # bridge prerouting: before br_netfilter (0), which hands frames to the IP hooks


def untrack_table(owner: str) -> str:
    """The nftables table (family bridge) of one deployed lab's (`owner`: its run and ledger scope) untrack rule."""
    return "protolab_" + re.sub(r"[^A-Za-z0-9_]", "_", owner)


def untrack_ruleset(table: str) -> str:
    return (f"table bridge {table} {{\n  chain prerouting {{\n    type filter hook prerouting priority "
            f"{UNTRACK_PRIORITY}; policy accept;\n    iifname \"{PREFIX}*\" notrack\n  }}\n}}\n")  # fmt: skip


def untrack_bridged(owner: str, ledger: Ledger | None = None) -> list[str]:
    """Frames bridged between lab ports skip the root namespace's connection tracking and its defragmenter (see
    the module's doc); return what was done. Nothing to do where br_netfilter does not hand bridged frames to the
    IP hooks."""
    if not any(_sysctl(sysctl) for _, sysctl in FAMILIES.values()):
        return []
    table = untrack_table(owner)
    if not shutil.which("nft"):
        raise RuntimeError(
            "bridged lab frames pass the root namespace's connection tracking (net.bridge.bridge-nf-call-iptables"
            "=1), which would reassemble their fragments in the emulated LAN, and nft is missing to exempt them: "
            "install nftables (make setup does)"
        )
    if ok(["nft", "list", "table", "bridge", table]):
        return []
    entry = ledger.add("nft", family="bridge", name=table) if ledger else None
    try:
        run(["nft", "-f", "-"], input=untrack_ruleset(table))
    except CommandError as exc:
        if ledger and entry:
            ledger.gone(entry)
        raise RuntimeError(f"exempting bridged lab frames from connection tracking (nft table bridge {table}): "
                           f"{exc}") from None  # fmt: skip
    return [f"frames bridged between {PREFIX}* ports skip the root namespace's conntrack and defragmenter "
            f"(nft table bridge {table})"]  # fmt: skip


TABLES = ("filter", "mangle", "raw")


def our_rules(comment: str | None = None) -> list[tuple[str, str, str]]:
    """(tool, table, rule) for every rule commented `protolab*` (or exactly `comment`) in the root namespace: a
    diagnostic for tests; removal goes by the ledger (protolab.ownership), never by this look-alike match."""
    body = re.escape(comment) if comment else re.escape(RULE_COMMENT) + r"\S*"
    pattern = re.compile(r"--comment " + body + r"(\s|$)")
    found = []
    for tool, _ in FAMILIES.values():
        for table in TABLES:
            try:
                rules = run([tool, "-w", "-t", table, "-S"]).splitlines()
            except CommandError:
                continue
            found += [(tool, table, r) for r in rules if pattern.search(r) and r.startswith("-A ")]
    return found
