"""The one error of the SPIMS language: where (line, column, the text found) and what was expected."""

from __future__ import annotations

from protolab.errors import SpecError
from protolab.spims.ast import Pos


class SpimsSyntaxError(SpecError):
    """A specification that does not parse or does not make sense: says where and why.

    `line` and `column` are 1-based (None for trees built in code); `found` is the offending text;
    `reason` the message without the position and the quoted source line.
    """

    def __init__(
        self,
        reason: str,
        pos: Pos | None = None,
        *,
        source: str | None = None,
        filename: str | None = None,
        where: str = "",
    ) -> None:
        self.reason = reason
        self.line = pos.line if pos else None
        self.column = pos.column if pos else None
        self.found = pos.text if pos else None
        self.filename = filename
        head = ", ".join(x for x in (filename, f"line {pos.line}, column {pos.column}" if pos else "", where) if x)
        msg = f"{head}: {reason}" if head else reason
        if pos and source is not None:
            lines = source.split("\n")
            if 1 <= pos.line <= len(lines):
                text = lines[pos.line - 1].expandtabs(1)
                msg += f"\n  {text}\n  {' ' * (pos.column - 1)}^"
        super().__init__(msg)
