"""Registries: kinds of topology, workload and measurement register themselves by name.

An unknown name fails with the list of the known ones (containerlab's node registry, node_exporter's
collector map). Registration happens at import time of the module that defines the kind.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownKindError(ValueError):
    pass


class Registry(Generic[T]):
    def __init__(self, what: str) -> None:
        self.what = what
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        if name in self._items and self._items[name] is not item:
            raise ValueError(f"{self.what} {name!r} registered twice")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise UnknownKindError(f"unknown {self.what} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._items.items())
