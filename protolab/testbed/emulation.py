"""Testbed hosts emulated on one machine (issue 18, item 5): each a network namespace with a Docker engine of its
own, all joined by an underlay bridge (in a namespace of its own), so that a lab over several hosts can be
deployed and tested without a second machine.

    hosts = emulation.start(["host_a", "host_b"], ledger)   # namespaces, underlay, engines, this machine on it
    inventory = emulation.write_inventory(hosts, path)       # for protolab.testbed.placement
    ...
    ledger.sweep()                                          # or `protolab clean`: engines, namespaces, links

The engine runs with its own data-root, exec-root and socket, no iptables and no bridge, entered with
`nsenter --net` rather than `ip netns exec`: the latter remounts /sys for the namespace, which hides the cgroup
hierarchies dockerd needs ("Devices cgroup isn't mounted"). It starts with no images; load_image() copies one
from the main engine (docker save, then docker load into each). Every object goes into the run's ledger before
it is made (kinds netns and engine), so teardown and `protolab clean` remove exactly these.
"""

from __future__ import annotations

import ipaddress
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .. import ownership
from ..errors import LabError
from ..shell import in_netns, run

PREFIX = "plab-emu-"
UNDERLAY_NS = "plab-emu-underlay"  # the "switch" between the hosts: a namespace of its own, not the root's, so
# that the root namespace's firewall (Docker's FORWARD policy DROP, with bridged frames passed to iptables)
# never sees the hosts' traffic
UNDERLAY_BRIDGE = "ul"
UNDERLAY_NET = ipaddress.ip_network("10.255.98.0/24")
CONTROL_LINK = "plab-ulctl"  # this machine's end of the control veth into the underlay bridge
CONTROL_PEER = "ctl"  # its other end, a port of the bridge
STATE = Path("/run/protolab-emu")
DATA = Path("/var/lib/protolab-emu")
ENGINE_TIMEOUT = 60.0


@dataclass
class EmulatedHost:
    name: str
    ns: str
    underlay: str  # its address on the underlay bridge
    sock: Path
    data_root: Path
    exec_root: Path
    pid: int | None = None
    ssh_key: Path | None = None  # with ssh: the client key its sshd accepts (root), and its host key's line
    known_hosts: Path | None = None

    @property
    def engine(self) -> str:
        return f"unix://{self.sock}"

    def docker(self, *args: str, **kw: Any) -> str:
        """The docker CLI against this host's engine."""
        return run(["docker", "-H", self.engine, *args], **kw)


def start(names: list[str], ledger: ownership.Ledger, ssh: bool = False) -> list[EmulatedHost]:
    """One emulated host per name (letters, digits, _), joined by UNDERLAY_BRIDGE, each engine answering. With
    `ssh`, each also runs an sshd on its underlay address, so that it can stand for a remote host reached over SSH
    (write_inventory then names it by address, login and key instead of by namespace)."""
    for name in names:  # each names a namespace, folders and an inventory's host: typed before anything is made
        if not name or not all(c.isascii() and (c.isalnum() or c == "_") for c in name) or len(name) > 20:
            raise LabError(f"--emulate-hosts: {name!r} is not an emulated host name (1-20 letters, digits or _)")
    if len(set(names)) != len(names):
        raise LabError(f"--emulate-hosts: a name given twice ({', '.join(names)})")
    if len(names) > UNDERLAY_NET.num_addresses - 3:
        raise LabError(f"{len(names)} emulated hosts: more than the underlay {UNDERLAY_NET} holds")
    hosts = []
    ledger.add("netns", name=UNDERLAY_NS)
    run(["ip", "netns", "add", UNDERLAY_NS])
    run(in_netns(["ip", "link", "add", UNDERLAY_BRIDGE, "type", "bridge"], UNDERLAY_NS))
    run(in_netns(["ip", "link", "set", UNDERLAY_BRIDGE, "up"], UNDERLAY_NS))
    _connect_control(ledger)
    for i, name in enumerate(names, start=1):
        ns = f"{PREFIX}{name}"[:32]
        ledger.add("netns", name=ns)
        run(["ip", "netns", "add", ns])
        run(in_netns(["ip", "link", "set", "lo", "up"], ns))
        port = f"h{i}"  # the underlay's port toward the host (the pair goes with the namespaces)
        run(in_netns(["ip", "link", "add", "ul0", "type", "veth", "peer", "name", port, "netns", UNDERLAY_NS], ns))
        run(in_netns(["ip", "link", "set", port, "master", UNDERLAY_BRIDGE, "up"], UNDERLAY_NS))
        addr = str(list(UNDERLAY_NET.hosts())[i])
        run(in_netns(["ip", "addr", "add", f"{addr}/{UNDERLAY_NET.prefixlen}", "dev", "ul0"], ns))
        run(in_netns(["ip", "link", "set", "ul0", "up"], ns))
        h = EmulatedHost(name, ns, addr, STATE / name / "docker.sock", DATA / name / "docker", STATE / name / "exec")
        _start_engine(h, ledger)
        if ssh:
            _start_sshd(h, ledger)
        hosts.append(h)
    return hosts


SSHD = "/usr/sbin/sshd"
SSHD_CONFIG = """ListenAddress {address}
HostKey {dir}/host_key
AuthorizedKeysFile {dir}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile {dir}/sshd.pid
SetEnv DOCKER_HOST={engine}
Subsystem sftp internal-sftp
"""


def _start_sshd(h: EmulatedHost, ledger: ownership.Ledger) -> None:
    """An sshd in the host's namespace on its underlay address, with a host key and a client key of its own (in
    the host's state folder, removed with its engine); a session's DOCKER_HOST is the host's engine."""
    if not Path(SSHD).exists():
        raise LabError(f"emulated host {h.name} reached over SSH needs {SSHD} (package openssh-server; `make setup` "
                       "installs it)")  # fmt: skip
    d = h.sock.parent / "ssh"
    d.mkdir(parents=True, exist_ok=True)
    for key in ("host_key", "id"):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"protolab-emu-{h.name}", "-f", str(d / key)])
    (d / "authorized_keys").write_text((d / "id.pub").read_text())
    kind, blob = (d / "host_key.pub").read_text().split()[:2]
    (d / "known_hosts").write_text(f"{h.underlay} {kind} {blob}\n")
    (d / "sshd_config").write_text(SSHD_CONFIG.format(address=h.underlay, dir=d, engine=h.engine))
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
    log = open(d / "sshd.log", "ab")  # noqa: SIM115 (the daemon keeps it)
    proc = subprocess.Popen(in_netns([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], h.ns),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    ledger.process(proc.pid)
    deadline = time.monotonic() + ENGINE_TIMEOUT
    while b"Server listening" not in (d / "sshd.log").read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = (d / "sshd.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise LabError(f"emulated host {h.name}: sshd did not start: {' | '.join(tail) or proc.returncode}")
        time.sleep(0.1)
    h.ssh_key, h.known_hosts = d / "id", d / "known_hosts"


def control_address() -> str:
    """This machine's address on the underlay: its last host address (the hosts count up from .2)."""
    return str(UNDERLAY_NET.broadcast_address - 1)


def _connect_control(ledger: ownership.Ledger) -> None:
    """A veth from this machine's namespace into the underlay bridge (control_address() on this end), so that this
    machine reaches the hosts as a machine on their network would: their Prometheus, their sshd."""
    ledger.link(CONTROL_LINK)
    run(["ip", "link", "add", CONTROL_LINK, "type", "veth", "peer", "name", CONTROL_PEER, "netns", UNDERLAY_NS])
    ledger.confirm_links()
    run(in_netns(["ip", "link", "set", CONTROL_PEER, "master", UNDERLAY_BRIDGE, "up"], UNDERLAY_NS))
    run(["ip", "addr", "add", f"{control_address()}/{UNDERLAY_NET.prefixlen}", "dev", CONTROL_LINK])
    run(["ip", "link", "set", CONTROL_LINK, "up"])


def _start_engine(h: EmulatedHost, ledger: ownership.Ledger) -> None:
    entry = ledger.add("engine", name=h.name, sock=str(h.sock), data_root=str(h.data_root),
                       exec_root=str(h.exec_root))  # fmt: skip
    for d in (h.sock.parent, h.data_root, h.exec_root):
        d.mkdir(parents=True, exist_ok=True)
    log = open(h.sock.parent / "dockerd.log", "ab")  # noqa: SIM115 (the daemon keeps it)
    cmd = in_netns(["dockerd", "--data-root", str(h.data_root), "--exec-root", str(h.exec_root),
                    "--host", h.engine, "--pidfile", str(h.sock.parent / "docker.pid"), "--iptables=false",
                    "--ip6tables=false", "--bridge=none", "--ip-forward=false", "--ip-masq=false"], h.ns)  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + ENGINE_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = (h.sock.parent / "dockerd.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise LabError(f"emulated host {h.name}: dockerd exited {proc.returncode}: {' | '.join(tail)}")
        if subprocess.run(["docker", "-H", h.engine, "info"], capture_output=True).returncode == 0:
            break
        time.sleep(0.3)
    else:
        raise LabError(f"emulated host {h.name}: dockerd did not answer on {h.sock} within {ENGINE_TIMEOUT:g} s")
    h.pid = proc.pid  # nsenter execs dockerd: the same process
    ledger.made(entry, daemon_pid=proc.pid, start=ownership.start_time(proc.pid))


def load_image(hosts: list[EmulatedHost], ref: str) -> None:
    """Copy an image from the main engine into the emulated hosts' engines that lack it (nothing is pulled)."""
    from . import reach

    reach.copy_images({h.name: h.engine for h in hosts}, {ref}, log=lambda _m: None)


def _inventory_vars(h: EmulatedHost, cpus: float) -> dict[str, Any]:
    """An emulated host as the inventory names it: by its namespace, or (with an sshd) as a remote host is named,
    by address, login, key and host key."""
    v: dict[str, Any] = {"protolab_underlay": h.underlay, "protolab_engine": h.engine, "protolab_cpus": cpus}
    if h.ssh_key is None:
        return v | {"protolab_netns": h.ns}
    return v | {"ansible_host": h.underlay, "ansible_user": "root", "ansible_ssh_private_key_file": str(h.ssh_key),
                "protolab_known_hosts": str(h.known_hosts), "ansible_python_interpreter": "/usr/bin/python3",
                "ansible_ssh_common_args": f"-o UserKnownHostsFile={h.known_hosts}"}  # fmt: skip


def write_inventory(hosts: list[EmulatedHost], path: Path, cpus: float = 1.0) -> Path:
    """An Ansible inventory naming the emulated hosts, as protolab.testbed.placement reads one."""
    doc = {"testbed": {"hosts": {h.name: _inventory_vars(h, cpus) for h in hosts}}}
    path.write_text("# emulated testbed hosts (protolab.testbed.emulation): network namespaces on this machine\n"
                    + yaml.safe_dump(doc, sort_keys=False))  # fmt: skip
    return path
