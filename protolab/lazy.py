"""Names of a package loaded on first use (PEP 562): the package imports none of its modules until a name of
one is asked for, so a caller that needs one light module does not load the heavy ones beside it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def names(package: str, namespace: dict[str, Any], homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: each name in `homes` is imported from its (relative) home on first
    use and kept in `namespace` (the package's globals()), so the next use is a plain lookup."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(home, package), name)
        namespace[name] = value
        return value

    return getattr_
