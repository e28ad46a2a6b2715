"""Both labs keep the contract (protolab.lab.api.RunningLab): every method with the protocol's parameters, every
data member as a property, a dataclass field or an attribute the class (or a base) assigns. A member one of them
lacks fails here, not as an AttributeError in the middle of a run (as sync_nic_filters over hosts once did)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import subprocess
import sys
import textwrap

import pytest

from protolab.lab.api import NodeAccess, RunningLab
from protolab.lab.local import Lab
from protolab.lab.testbed import TestbedLab


def _members(proto: type) -> dict[str, str]:
    """The protocol's members: name -> 'method' or 'data' (properties and annotated attributes)."""
    out: dict[str, str] = {}
    for cls in reversed(proto.__mro__):
        if cls in (object,) or not getattr(cls, "_is_protocol", False):
            continue
        out |= dict.fromkeys(cls.__dict__.get("__annotations__", {}), "data")
        for name, v in cls.__dict__.items():
            if isinstance(v, property):
                out[name] = "data"
            elif inspect.isfunction(v) and not name.startswith("_"):
                out[name] = "method"
    return out


def _assigned(cls: type) -> set[str]:
    """Attributes a class or one of its bases assigns to self (self.x = ..., self.x: T = ..., a, self.x = ...)."""
    names: set[str] = set()
    for c in cls.__mro__:
        if c is object:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(c)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            stored = isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
            if stored and isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
    return names


_ABSENT = object()


def _has(cls: type, name: str, kind: str) -> str | None:
    """Why cls does not keep member `name` of kind `kind`, or None."""
    attr = inspect.getattr_static(cls, name, _ABSENT)
    if kind == "method":
        if not callable(attr):
            return f"{cls.__name__}.{name}: no method"
        want = list(inspect.signature(getattr(RunningLab, name)).parameters)
        got = list(inspect.signature(attr).parameters)
        if [p.lstrip("_") for p in got] != want:
            return f"{cls.__name__}.{name}{tuple(got)}: the contract's parameters are {tuple(want)}"
        return None
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    if attr is not _ABSENT or name in fields or name in _assigned(cls):
        return None
    return f"{cls.__name__}.{name}: no such attribute, property or field"


@pytest.mark.parametrize("impl", [Lab, TestbedLab], ids=["Lab", "TestbedLab"])
def test_each_lab_keeps_the_whole_contract(impl: type):
    members = _members(RunningLab)
    assert {"exec", "sync_nic_filters", "links", "teardown", "emulator_drops"} <= set(members)
    missing = [why for name, kind in sorted(members.items()) if (why := _has(impl, name, kind))]
    assert missing == []


def test_a_missing_member_is_found():
    class Partial:
        topology = None

        def exec(self, node: str, cmd: list[str], timeout: float | None = None) -> tuple[int, str, str]:
            return 0, "", ""

        def ip(self, node: str, family: int = 4) -> str:  # a parameter short
            return ""

    assert _has(Partial, "exec", "method") is None and _has(Partial, "topology", "data") is None
    assert _has(Partial, "sync_nic_filters", "method") == "Partial.sync_nic_filters: no method"
    assert "the contract's parameters are ('self', 'node', 'intf', 'family')" in str(_has(Partial, "ip", "method"))
    assert _has(Partial, "cpus", "data") == "Partial.cpus: no such attribute, property or field"


def test_the_runners_view_is_part_of_the_contract():
    assert set(_members(NodeAccess)) < set(_members(RunningLab))


def test_the_contract_loads_no_lab():
    code = "import sys, protolab.lab.api\nprint(sorted(m for m in sys.modules if m in ('protolab.lab.local', "
    code += "'docker', 'protolab.lab.linkstate', 'protolab.lab.testbed', 'protolab.lab.parts')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
