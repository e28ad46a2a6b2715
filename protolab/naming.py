"""Names and labels of everything the tool creates on a machine.

`protolab clean` removes what the runs' ledgers list (protolab.ownership), not what merely looks like these
names; the names are for people and for the ledger's records.
- Docker containers, networks: label `protolab.managed=true` (and `protolab.run=<run id>`); containers are
  named `plab-<node>`; the monitoring stack is the compose project `protolab`.
- Root-namespace links (bridges, their veth ends, IFBs): name starts with `plab-`.
- iptables/ip6tables rules: comment `protolab` (the bridged-forwarding accept) or `protolab-impair`.
- Processes (node shells, link emulators): environment `PROTOLAB_NODE=<node>` and `PROTOLAB_RUN=<run id>`.
"""

LABEL = "protolab.managed"
RUN_LABEL = "protolab.run"
NODE_LABEL = "protolab.node"
ROLE_LABEL = "protolab.role"
PREFIX = "plab-"
CONTAINER_PREFIX = "plab-"
MGMT_NETWORK = "plab-mgmt"
COMPOSE_PROJECT = "protolab"
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


def bridge_name(switch: str) -> str:
    """Root-namespace name of a topology switch: s1 -> plab-s1 (interfaces plab-s1-eth1, ...)."""
    name = PREFIX + switch
    if len(name) > 10:  # room for '-eth' + 1..2 digits within IFNAMSIZ (15)
        raise ValueError(f"switch name {switch!r} too long (max {10 - len(PREFIX)} characters)")
    return name


def container_name(node: str) -> str:
    return CONTAINER_PREFIX + node
