"""A task's sysctls: set in its hosts' namespaces for the phase, read back, put back after, validated."""

import re
import shlex

import pytest
from pydantic import ValidationError

from protolab.orchestrator.sysctls import PhaseSysctls
from protolab.workloads.request_response import RequestResponseTask


class FakeNode:
    """A node's shell (Mininet's cmd) over a dict of sysctls; keys it lacks fail as sysctl does."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def cmd(self, script: str) -> str:
        if t := re.fullmatch(r"(.*); echo \"rc=\$\?\"", script):
            argv = shlex.split(t.group(1))
            if argv[0] == "test":
                return "rc=0" if argv[2].removeprefix("/proc/sys/").replace("/", ".") in self.values else "rc=1"
        m = re.fullmatch(r"\{ (.*) ; \} 2>&1; echo \"rc=\$\?\"", script)
        argv = shlex.split(m.group(1))
        assert argv[0] == "sysctl", script
        key, _, value = argv[2].partition("=")
        if key not in self.values:
            return f"sysctl: cannot stat /proc/sys/{key.replace('.', '/')}: No such file or directory\nrc=255"
        if argv[1] == "-qw":
            if value == "-1":
                return f'sysctl: setting key "{key}": Invalid argument\nrc=255'
            self.values[key] = value
            return "rc=0"
        return f"{self.values[key]}\nrc=0"


class FakeLab:
    def __init__(self) -> None:
        self.nodes = {n: FakeNode({"net.ipv4.tcp_sack": "1", "net.mptcp.stale_loss_cnt": "4"}) for n in ("h1", "h2")}

    def node_shell(self, node: str, script: str) -> str:
        return self.nodes[node].cmd(script)


class Runner:
    def __init__(self) -> None:
        self.sysctls_set: dict = {}
        self.skipped: str | None = None


def task(**sysctls: str) -> RequestResponseTask:
    return RequestResponseTask(kind="request_response", name="rr", client="h1", server="h2", duration="5s",
                               sysctls={k.replace("__", "."): v for k, v in sysctls.items()})  # fmt: skip


def test_sysctls_are_set_on_the_tasks_hosts_read_back_and_put_back():
    lab, r = FakeLab(), Runner()
    ps = PhaseSysctls(lab)
    ps.apply([(task(net__ipv4__tcp_sack="0", net__mptcp__stale_loss_cnt="1"), r)])
    assert r.sysctls_set == {h: {"net.ipv4.tcp_sack": "0", "net.mptcp.stale_loss_cnt": "1"} for h in ("h1", "h2")}
    assert lab.nodes["h2"].values["net.ipv4.tcp_sack"] == "0"
    assert ps.restore() == []
    assert all(n.values == {"net.ipv4.tcp_sack": "1", "net.mptcp.stale_loss_cnt": "4"} for n in lab.nodes.values())


def test_a_value_the_kernel_refuses_skips_the_task_and_puts_back_what_it_set():
    """e.g. a congestion control a namespace may not choose (EPERM): that sweep point's task is skipped, saying
    why, and the other tasks of the phase keep theirs."""
    lab, r, other = FakeLab(), Runner(), Runner()
    ps = PhaseSysctls(lab)
    ps.apply([(task(net__ipv4__tcp_sack="0", net__mptcp__stale_loss_cnt="-1"), r),
              (task(net__ipv4__tcp_sack="0"), other)])  # fmt: skip
    assert r.skipped and re.search(r"net.mptcp.stale_loss_cnt.*Invalid argument.*refuses", r.skipped)
    assert r.sysctls_set == {}
    assert other.skipped is None and other.sysctls_set["h2"] == {"net.ipv4.tcp_sack": "0"}
    assert lab.nodes["h1"].values["net.mptcp.stale_loss_cnt"] == "4"
    assert ps.restore() == []
    assert all(n.values == {"net.ipv4.tcp_sack": "1", "net.mptcp.stale_loss_cnt": "4"} for n in lab.nodes.values())


@pytest.mark.parametrize("bad", [{"kernel.panic": "1"}, {"net.ipv4.tcp_sack": "0; reboot"}, {"net": "1"}])
def test_only_plain_net_sysctls_are_taken(bad):
    with pytest.raises(ValidationError, match="only net"):
        RequestResponseTask(kind="request_response", name="rr", client="h1", server="h2", duration="5s", sysctls=bad)


def test_a_sysctl_of_a_part_the_kernel_lacks_skips_the_task_saying_why():
    lab, r, other = FakeLab(), Runner(), Runner()
    PhaseSysctls(lab).apply([(task(net__sctp__rto_min="10"), r), (task(net__ipv4__tcp_sack="0"), other)])
    assert r.skipped and "net.sctp.rto_min does not exist on h1" in r.skipped and r.sysctls_set == {}
    assert other.skipped is None and other.sysctls_set["h1"] == {"net.ipv4.tcp_sack": "0"}
