"""Names and labels of everything the tool creates on a machine, scoped to the protolab instance.

An instance is one state folder (PROTOLAB_STATE_DIR, default /run/protolab: its lock and ledgers). Its id is ""
for the default state folder, so existing users see the names they know, and otherwise six hex digits of the
folder's path (sha256), which `protolab` puts into PROTOLAB_INSTANCE for everything it starts; PROTOLAB_INSTANCE
set by hand chooses the id instead. Two instances side by side never share a Docker name or label, so `clean`
of one never touches the other's lab (its label sweep filters on the instance's own label key):

| what                        | default instance      | instance 3fa9c2                 |
|-----------------------------|-----------------------|---------------------------------|
| node containers             | plab-<node>           | plab-3fa9c2-<node>              |
| management network          | plab-mgmt             | plab-mgmt-3fa9c2                |
| label on every Docker object| protolab.managed=true | protolab.managed.3fa9c2=true    |
| monitoring compose project  | protolab              | protolab-3fa9c2                 |
| Prometheus container        | plab-prometheus       | plab-3fa9c2-prometheus          |
| Grafana container           | plab-grafana          | plab-3fa9c2-grafana             |
| their ports on 127.0.0.1    | 9090, 3000            | the instance's own (protolab.monitor.ports) |
| multi-host keepers' state   | /run/protolab-hosts   | /run/protolab-hosts-3fa9c2      |
| state on a host over SSH    | /run/protolab-keepers | /run/protolab-keepers-3fa9c2    |
|                             | /run/protolab-hostmon | /run/protolab-hostmon-3fa9c2    |
| keepers on a host over SSH  | PROTOLAB_INSTANCE=    | PROTOLAB_INSTANCE=3fa9c2        |

Machine-wide, whatever the instance (the kernel's names leave no room for an id: IFNAMSIZ is 15):
- root-namespace links (bridges, their veth ends, IFBs) start with `plab-`: two instances side by side need
  topologies with different switch names, else the second deploy is refused naming the link;
- iptables/ip6tables rules carry the comment `protolab` (the bridged-forwarding accept) or `protolab-impair`;
- emulated testbed hosts (their namespaces `plab-emu-*`, /run/protolab-emu): one multi-host emulation at a time;
- processes (node shells, link emulators) carry PROTOLAB_NODE=<node> and PROTOLAB_RUN=<run id> (run ids are
  unique, and `clean` matches processes by its own ledgers' run ids).
`protolab clean` removes what the instance's ledgers list (protolab.ownership), not what merely looks like these
names; the names are for people and for the ledger's records.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

INSTANCE_ENV = "PROTOLAB_INSTANCE"
RUN_LABEL = "protolab.run"
NODE_LABEL = "protolab.node"
ROLE_LABEL = "protolab.role"
PREFIX = "plab-"
RULE_COMMENT = "protolab"
IMPAIR_COMMENT = "protolab-impair"  # rules of the fallback impairment backend
PROCESS_ENV = "PROTOLAB_NODE"
STATE_DIR = "/run/protolab"
AGENT_PORT = 9100
# protolab-dishost's /metrics while a dis task runs: the receiver on DIS_PORT, the sender on DIS_PORT + 1 (so both
# fit on one node when a task runs over the loopback)
DIS_PORT = 9102
# protolab-converter's /metrics while a converter task runs (one converter process per node: c1, c2, h, host, wan)
CONVERTER_PORT = 9104
_INSTANCE_ID = re.compile(r"[a-z0-9]{1,12}")


def instance_of(state_dir: str | os.PathLike[str]) -> str:
    """The instance id of a state folder: "" for the default one, else 6 hex digits of its absolute path."""
    path = os.path.normpath(os.path.abspath(state_dir))
    if path == STATE_DIR:
        return ""
    return hashlib.sha256(path.encode()).hexdigest()[:6]


def instance() -> str:
    """This process's instance id (PROTOLAB_INSTANCE; unset: the default instance, "")."""
    value = os.environ.get(INSTANCE_ENV, "")
    if value and not _INSTANCE_ID.fullmatch(value):
        raise ValueError(f"{INSTANCE_ENV}={value!r}: an instance id is 1 to 12 of a-z and 0-9 (unset: the default)")
    return value


def adopt_instance() -> str:
    """`protolab`'s start: PROTOLAB_INSTANCE from the state folder unless set, for this process and its children
    (lab keepers, link emulators) alike; returns it."""
    if INSTANCE_ENV not in os.environ:
        os.environ[INSTANCE_ENV] = instance_of(os.environ.get("PROTOLAB_STATE_DIR", STATE_DIR))
    return instance()


def scoped_path(default: Path) -> Path:
    """A machine-wide folder of the default instance, for this instance: /run/protolab-hosts-3fa9c2 for 3fa9c2."""
    i = instance()
    return Path(f"{default}-{i}") if i else default


def instance_env() -> str:
    """PROTOLAB_INSTANCE=<id> for `env` on a host reached over SSH, whose processes must name what they make as
    this instance does (an empty id: the default instance)."""
    return f"{INSTANCE_ENV}={instance()}"


def _scoped(default: str, sep: str) -> str:
    i = instance()
    return f"{default}{sep}{i}" if i else default


def __getattr__(name: str) -> str:
    """The instance's names, read at each use (PROTOLAB_INSTANCE may be set after this module was imported)."""
    if name == "LABEL":  # every Docker object protolab makes carries LABEL=true; the sweep looks for it
        return _scoped("protolab.managed", ".")
    if name == "MGMT_NETWORK":
        return _scoped("plab-mgmt", "-")
    if name == "COMPOSE_PROJECT":
        return _scoped("protolab", "-")
    if name == "CONTAINER_PREFIX":
        i = instance()
        return f"plab-{i}-" if i else "plab-"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def bridge_name(switch: str) -> str:
    """Root-namespace name of a topology switch: s1 -> plab-s1 (interfaces plab-s1-eth1, ...)."""
    name = PREFIX + switch
    if len(name) > 10:  # room for '-eth' + 1..2 digits within IFNAMSIZ (15)
        raise ValueError(f"switch name {switch!r} too long (max {10 - len(PREFIX)} characters)")
    return name


def container_name(node: str) -> str:
    return __getattr__("CONTAINER_PREFIX") + node


def prometheus_container() -> str:
    return container_name("prometheus")


def grafana_container() -> str:
    return container_name("grafana")
