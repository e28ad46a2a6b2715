"""Host settings a lab can change as a side effect, snapshotted before a run and restored after it.

A fallback impairment's `-m physdev` rule makes a modular kernel load br_netfilter, which turns
`net.bridge.bridge-nf-call-*` on for every bridge of the host (Docker's FORWARD DROP then applies to all
of them). The snapshot records those sysctls and whether br_netfilter (and xt_physdev, which pins it) were
loaded; `restore` puts back what differs: sysctl values, and modules the run loaded and nothing else uses.
On a kernel with these built in (no /proc/modules) only the sysctls can differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .shell import run

SYSCTLS = (
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
    "net.bridge.bridge-nf-call-arptables",
    "net.ipv4.ip_forward",
    "net.ipv6.conf.all.forwarding",
    "net.ipv6.conf.all.disable_ipv6",
    "net.ipv6.conf.default.disable_ipv6",
)
MODULES = ("br_netfilter", "xt_physdev")  # unloaded in this order: xt_physdev holds br_netfilter


def _sysctl_path(root: Path, name: str) -> Path:
    return root / "proc/sys" / name.replace(".", "/")


def module_state(name: str, root: Path = Path("/")) -> str:
    """'loaded', 'absent', or 'builtin' (a kernel without loadable modules, or compiled in)."""
    modules = root / "proc/modules"
    if not modules.exists():
        return "builtin"
    names = {line.split()[0] for line in modules.read_text().splitlines() if line.strip()}
    if name in names:
        return "loaded"
    return "builtin" if (root / "sys/module" / name).is_dir() else "absent"


def snapshot(root: Path = Path("/")) -> dict[str, Any]:
    sysctls: dict[str, str | None] = {}
    for s in SYSCTLS:
        try:
            sysctls[s] = _sysctl_path(root, s).read_text().strip()
        except OSError:
            sysctls[s] = None  # br_netfilter not loaded: the net.bridge keys do not exist
    return {"sysctls": sysctls, "modules": {m: module_state(m, root) for m in MODULES}}


def differences(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    out = [f"sysctl {k}: {v!r} before, {now['sysctls'].get(k)!r} now"
           for k, v in before["sysctls"].items() if now["sysctls"].get(k) != v]  # fmt: skip
    out += [f"module {k}: {v} before, {now['modules'].get(k)} now"
            for k, v in before["modules"].items() if now["modules"].get(k) != v]  # fmt: skip
    return out


def _unused(name: str, root: Path) -> bool:
    try:
        return (root / "sys/module" / name / "refcnt").read_text().strip() == "0"
    except OSError:
        return False


def restore(before: dict[str, Any], root: Path = Path("/"), runner: Any = run) -> list[str]:
    """Put back what differs from `before`; return what was done. Raises CommandError naming what failed."""
    done: list[str] = []
    for m in MODULES:
        if before["modules"].get(m) == "absent" and module_state(m, root) == "loaded":
            if not _unused(m, root):
                done.append(f"module {m} left loaded: in use by something else now")
                continue
            runner(["modprobe", "-r", m])
            done.append(f"unloaded module {m} (the run had loaded it)")
    now = snapshot(root)
    for k, v in before["sysctls"].items():
        if v is None or now["sysctls"].get(k) in (None, v):
            continue
        runner(["sysctl", "-qw", f"{k}={v}"])
        done.append(f"sysctl {k} back to {v}")
    return done
