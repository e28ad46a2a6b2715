"""What each link of a running lab does now, with one owner: every direction's impairment (through one
impairment backend) and whether the link's cable is in.

The spec's impairments are `configured`; step changes, fault schedules and the self-check's pass-through
move `current` away from them, and restore() puts every link back: cables in, impairments as configured.
A link goes down the way a cable is pulled at the switch (protolab.lab.faults describes it).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..model.impairment import Impairment, LinkImpairment, merge_over
from ..shell import run as run_command
from ..units import format_rate
from . import impair
from .impair import Endpoint

if TYPE_CHECKING:
    from ..topo import Topology

Direction = tuple[str, str]
Setting = tuple[Impairment, str]  # the impairment, and where it is applied ("sender" or "receiver")
DIRECTIONS = {"both": lambda a, b: [(a, b), (b, a)], "forward": lambda a, b: [(a, b)], "reverse": lambda a, b: [(b, a)]}


def cut_end(ends: tuple[Endpoint, Endpoint]) -> Endpoint:
    """Which end to set down: the bridge port (root namespace) if there is one, else the second node's."""
    return next((e for e in ends if e.pid is None), ends[1])


def wanted_settings(topology: Topology, impairments: list[LinkImpairment]) -> dict[Direction, Setting]:
    """Every direction's setting as a lab applies it: each link's rate both ways (at the sender), with the spec's
    impairments merged over it field by field."""
    wanted: dict[Direction, Setting] = {}
    for lk in topology.links:
        if lk.rate_bps:
            base = Impairment(rate=format_rate(lk.rate_bps))
            wanted[(lk.node1, lk.node2)] = (base, "sender")
            wanted[(lk.node2, lk.node1)] = (base, "sender")
    for item in impairments:
        merge_over(wanted, item)
    return wanted


def step_changes(current: dict[Direction, Setting], link: Direction, direction: str,
                 change: Impairment | None) -> list[tuple[Direction, Impairment, str]]:  # fmt: skip
    """A step change's new settings: on each direction of `link` it names, the fields given in `change` replace
    the current ones; (direction, impairment, where applied) for each."""
    given = {k: getattr(change, k) for k in (change.model_fields_set if change else set())}
    out = []
    for d in DIRECTIONS[direction](*link):
        imp, at = current.get(d, (Impairment(), "sender"))
        out.append((d, imp.model_copy(update=given), at))
    return out


class LinkState:
    """The one owner of the lab's link state; `backend` and `run` are replaceable for tests."""

    def __init__(
        self,
        link_ends: dict[Direction, tuple[Endpoint, Endpoint]],
        backend: impair.Backend,
        ledger: Any = None,
        run: Callable[..., str] = run_command,
        clear: Callable[[Endpoint, Endpoint], None] = impair.clear,
    ) -> None:
        self.link_ends, self.backend, self.ledger = link_ends, backend, ledger
        self._run, self._clear = run, clear
        self.configured: dict[Direction, Setting] = {}
        self.current: dict[Direction, Setting] = {}
        self.cut: set[Direction] = set()  # links (as keyed in link_ends) whose cable is out
        self.applied: list[dict[str, Any]] = []  # what each direction got, for the manifest
        self.shaped_interfaces: set[str] = set()

    def ends(self, a: str, b: str) -> tuple[Endpoint, Endpoint]:
        """(sender, receiver) endpoints of the direction a -> b."""
        if (a, b) in self.link_ends:
            return self.link_ends[(a, b)]
        if (b, a) not in self.link_ends:
            raise KeyError(f"no link between {a} and {b}")
        receiver, sender = self.link_ends[(b, a)]
        return sender, receiver

    def _key(self, link: Direction) -> Direction:
        if link in self.link_ends:
            return link
        if link[::-1] in self.link_ends:
            return link[::-1]
        raise KeyError(f"no link between {link[0]} and {link[1]}")

    # -- impairments ----------------------------------------------------------------------------------
    def configure(self, wanted: dict[Direction, Setting]) -> None:
        """The spec's settings: applied now (independent interfaces in parallel) and kept for restore()."""
        self.configured = dict(wanted)
        with ThreadPoolExecutor(max_workers=8) as pool:
            for f in [pool.submit(self.replace, a, b, imp, at) for (a, b), (imp, at) in wanted.items()]:
                f.result()

    def replace(self, a: str, b: str, imp: Impairment, at: str) -> None:
        """Direction a -> b does exactly `imp` from now on: changed in one step where the backend can."""
        sender, receiver = self.ends(a, b)
        if at == "receiver" and receiver.pid is None and self.ledger is not None:
            self.ledger.link(impair.ifb_for(receiver).intf)  # an IFB in the root namespace
        prev = self.current.get((a, b))
        if prev is not None:
            if prev[1] == at and self.backend.change(sender, receiver, prev[0], imp, at):
                self.current[(a, b)] = (imp, at)
                return
            self._clear(sender, receiver)
        self.current[(a, b)] = (imp, at)
        if not imp.shaping_only() or imp.rate:
            done = self.backend.apply(sender, receiver, imp, at)
            self.shaped_interfaces.update({sender.intf, receiver.intf})
            config = imp.model_dump(mode="json", exclude_defaults=True)
            self.applied.append({"from": a, "to": b, "at": at, "backend": self.backend.name, "impairment": config,
                                 "commands": done})  # fmt: skip

    def step(self, link: Direction, direction: str, change: Impairment | None) -> None:
        """A step change: the fields given in `change` replace the current ones of that link's direction(s)."""
        for d, imp, at in step_changes(self.current, link, direction, change):
            self.replace(*d, imp, at)

    # -- cables ---------------------------------------------------------------------------------------
    def set_cable(self, link: Direction, state: str) -> None:
        """Pull ("down") or plug ("up") the link's cable."""
        key = self._key(link)
        end = cut_end(self.link_ends[key])
        self._run(end.cmd("ip", "link", "set", "dev", end.intf, state))
        (self.cut.add if state == "down" else self.cut.discard)(key)

    # -- back to the spec -----------------------------------------------------------------------------
    def restore(self) -> list[str]:
        """Every cable in and every direction as configured; returns what could not be restored (each is
        tried on its own)."""
        failures = []
        for key, ends in self.link_ends.items():  # all of them: a schedule stopped mid-event may not have said
            end = cut_end(ends)
            try:
                self._run(end.cmd("ip", "link", "set", "dev", end.intf, "up"))
                self.cut.discard(key)
            except Exception as exc:
                failures.append(f"link {key[0]}-{key[1]} up: {exc}")
        for d in set(self.current) - set(self.configured):
            try:
                self._clear(*self.ends(*d))
                del self.current[d]
            except Exception as exc:
                failures.append(f"{d[0]}->{d[1]} clear: {exc}")
        for d, (imp, at) in self.configured.items():
            if self.current.get(d) != (imp, at):
                try:
                    self.replace(*d, imp, at)
                except Exception as exc:
                    failures.append(f"{d[0]}->{d[1]} back to configured: {exc}")
        return failures
