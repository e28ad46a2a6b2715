"""Typed strings for model fields whose values end up naming things on the machine or passed to `ip`, `tc` and
the like: addresses, networks, names, file names, image references.

Each type says what it is and refuses everything else, whatever a parser would let through: an address is
written in digits, dots, colons and a prefix length only (no IPv6 scope ID `%...`, which Python's ipaddress
accepts with any text after it), a name is an identifier (letters, digits, `_`, `.`, `-`; not starting with
`-` or `.`; no `..`; bounded length), a file name has no `/` and is not `.` or `..`. Commands take values as
argv items, never through a shell; these checks are the other half: a value that reaches a command is one
thing of one type.

Validators raise ValueError with the reason; pydantic puts the field's location in front.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated

from pydantic import AfterValidator, Field

MAX_NAME = 64
ADDRESS_CHARS_RE = re.compile(r"[0-9A-Fa-f.:/]+")
NAME_CHARS_RE = re.compile(r"[A-Za-z0-9_.-]+")
IMAGE_RE = re.compile(r"[a-z0-9][a-z0-9._/:@-]*")
MAX_IMAGE = 255


def _address_text(v: str) -> str | None:
    """Why `v` is not written as an address (None: its characters are an address's)."""
    if "%" in v:
        return f"{v!r}: an IPv6 scope ID (%...) is not allowed; give a plain address"
    if not ADDRESS_CHARS_RE.fullmatch(v):
        return f"{v!r}: an address is digits, dots, colons and a /prefix only"
    return None


def plain_address(v: str) -> str:
    """An IPv4 or IPv6 address, e.g. 10.0.1.2 or fd00::2 (no prefix, no scope ID)."""
    if why := _address_text(v):
        raise ValueError(why)
    try:
        ipaddress.ip_address(v)
    except ValueError:
        raise ValueError(f"{v!r} is not an address, e.g. 10.0.1.2") from None
    return v


def plain_network(v: str) -> str:
    """A network prefix, e.g. 10.0.9.0/24 (host bits zero, no scope ID)."""
    if why := _address_text(v):
        raise ValueError(why)
    try:
        ipaddress.ip_network(v)
    except ValueError as exc:
        raise ValueError(f"{v!r}: {exc}") from None
    return v


def plain_interface(v: str) -> str:
    """An address with its prefix length, e.g. 10.0.1.1/24 (no scope ID)."""
    if why := _address_text(v):
        raise ValueError(why)
    try:
        ipaddress.ip_interface(v)
    except ValueError:
        raise ValueError(f"{v!r} is not an address with a prefix length, e.g. 10.0.1.1/24") from None
    return v


def name_problem(v: str, limit: int = MAX_NAME) -> str | None:
    """Why `v` cannot be a name (None: it can): 1..limit letters, digits, `_`, `.`, `-`, starting with neither `-`
    nor `.`, without `..`."""
    if not v:
        return "empty; a name is at least one character"
    if len(v) > limit:
        return f"{v[:20]!r}... is {len(v)} characters; a name is at most {limit}"
    if v[0] in "-.":
        return f"{v!r} starts with {v[0]!r}; a name starts with a letter, digit or _"
    if not NAME_CHARS_RE.fullmatch(v):
        bad = sorted({c for c in v if not NAME_CHARS_RE.fullmatch(c)})
        return f"{v!r} has {''.join(bad)!r}; a name is letters, digits, _, . and - only"
    if ".." in v:
        return f"{v!r} has '..'; a name is not a path"
    return None


def safe_name(v: str) -> str:
    if why := name_problem(v):
        raise ValueError(why)
    return v


def file_name(v: str) -> str:
    """One file's name in a folder the program chooses: a name (as safe_name), so no `/`, `..` or leading `-`."""
    if why := name_problem(v, limit=255):
        raise ValueError(why)
    return v


def image_problem(v: str) -> str | None:
    """Why `v` is not a container image reference (None: it is)."""
    if not v or len(v) > MAX_IMAGE:
        return f"an image reference is 1-{MAX_IMAGE} characters"
    if not IMAGE_RE.fullmatch(v):
        return (
            f"{v!r}: an image reference is lower-case letters, digits and . _ / : @ -, starting with a letter or digit"
        )
    if ".." in v or "//" in v:
        return f"{v!r}: not an image reference ('..' or '//')"
    return None


def image_reference(v: str) -> str:
    if why := image_problem(v):
        raise ValueError(why)
    return v


_NAME_SCHEMA = {"pattern": r"^[A-Za-z0-9_](?!.*\.\.)[A-Za-z0-9_.-]*$"}
# schema keywords as hints for editors only: the validators above check, with their own messages
IpAddress = Annotated[str, AfterValidator(plain_address)]
IpNetwork = Annotated[str, AfterValidator(plain_network)]
IpInterface = Annotated[str, AfterValidator(plain_interface)]
SafeName = Annotated[str, AfterValidator(safe_name), Field(json_schema_extra={**_NAME_SCHEMA, "maxLength": MAX_NAME})]
FileName = Annotated[str, AfterValidator(file_name), Field(json_schema_extra={**_NAME_SCHEMA, "maxLength": 255})]
ImageRef = Annotated[str, AfterValidator(image_reference), Field(json_schema_extra={"maxLength": MAX_IMAGE})]
