"""The Docker FORWARD-DROP / br_netfilter trap, found and fixed narrowly for the lab's own bridges.

Docker sets the iptables FORWARD policy to DROP; with br_netfilter's `bridge-nf-call-iptables` on, frames
bridged between two ports of *any* Linux bridge traverse that chain, so a Mininet LAN silently loses all
traffic. We neither switch the sysctl off (Docker needs it) nor open FORWARD: one rule per family accepts
only frames bridged within a `plab-*` bridge, tagged with the comment `protolab` so teardown and
`protolab clean` remove exactly it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .naming import PREFIX, RULE_COMMENT
from .shell import CommandError, ok, run

if TYPE_CHECKING:
    from .ownership import Ledger

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
