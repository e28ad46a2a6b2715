"""The lab-state lock, the ledger of what a run made, host-state restore and the salvage of a killed run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from protolab import engine, kernelstate, ownership
from protolab.errors import EXIT_BUSY, LabBusyError
from protolab.results.salvage import finalize_orphan
from protolab.results.store import JsonLog


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def _hold_in_child(state: Path) -> subprocess.Popen:
    code = textwrap.dedent(f"""
        import os, sys, time
        os.environ["PROTOLAB_STATE_DIR"] = {str(state)!r}
        from protolab import ownership
        ownership.LOCK.acquire("run", "20261123T000000Z-abcd")
        print("held", flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_second_holder_is_refused_with_the_first_ones_pid_and_run(state):
    child = _hold_in_child(state)
    try:
        with pytest.raises(LabBusyError) as exc:
            ownership.LOCK.acquire("clean", hint="`protolab clean --force` ...")
        msg = str(exc.value)
        assert f"PID {child.pid}" in msg and "20261123T000000Z-abcd" in msg and "--force" in msg
        assert exc.value.exit_status == EXIT_BUSY
        assert ownership.holder()["pid"] == child.pid
    finally:
        child.kill()
        child.wait()
    # the kernel released it with the process (as after SIGKILL)
    with ownership.lab_lock("clean"):
        assert ownership.holder()["command"] == "clean"
    assert ownership.holder() is None


def test_the_lock_is_reentrant_within_a_process():
    with ownership.lab_lock("run"):
        with ownership.lab_lock("deploy", "r1"):
            assert ownership.LOCK.depth == 2
        assert ownership.LOCK.depth == 1 and ownership.holder()["run_id"] == "r1"
    assert ownership.LOCK.depth == 0


def test_the_ledger_keeps_added_until_gone_and_survives_a_torn_line():
    ledger = ownership.Ledger("r1", "lab1")
    a = ledger.add("link", name="plab-s1")
    ledger.made(a, ifindex=42)
    b = ledger.add("container", name="plab-h1")
    ledger.gone(b)
    ledger.scoped("session").add("network", name="plab-mgmt")
    with ledger.path.open("a") as f:
        f.write('{"op": "add", "kind": "link", "na')  # a crash mid-write
    live = ledger.entries()
    assert [(e["kind"], e.get("name"), e.get("ifindex")) for e in live] == [
        ("link", "plab-s1", 42),
        ("network", "plab-mgmt", None),
    ]
    assert [e["kind"] for e in ledger.entries("lab1")] == ["link"]
    assert oct(ledger.path.stat().st_mode & 0o777) == "0o600"


def test_making_marks_gone_what_failed_to_be_made():
    ledger = ownership.Ledger("r1")
    with pytest.raises(RuntimeError), ledger.making("link", name="plab-x"):
        raise RuntimeError("File exists")  # someone else's: never ours to remove
    assert ledger.entries() == []


def test_sweep_removes_in_order_reports_failures_and_keeps_them(monkeypatch):
    done = []

    def ok(entry, ctx, remove):
        if remove:
            done.append((entry["kind"], entry.get("name")))
        return True

    def broken(entry, ctx, remove):
        raise RuntimeError("device busy")

    monkeypatch.setitem(ownership.REMOVERS, "link", ok)
    monkeypatch.setitem(ownership.REMOVERS, "container", ok)
    monkeypatch.setitem(ownership.REMOVERS, "rule", broken)
    ledger = ownership.Ledger("r1")
    ledger.add("link", name="plab-s1")
    ledger.add("rule", tool="iptables", table="raw", rule=["PREROUTING", "-j", "ACCEPT"])
    ledger.add("container", name="plab-h1")
    failures = ledger.sweep(ctx=ownership.Context(client=object()))
    assert done == [("container", "plab-h1"), ("link", "plab-s1")]  # containers before links
    assert failures == ["rule iptables -t raw PREROUTING -j ACCEPT: device busy"]
    assert [e["kind"] for e in ledger.entries()] == ["rule"] and ledger.path.exists()


def test_a_link_of_the_same_name_made_later_is_not_ours(monkeypatch):
    monkeypatch.setattr(engine, "ifindex", lambda name, netns_pid=None: 7)
    ran = []
    monkeypatch.setattr(ownership, "run", lambda cmd, **kw: ran.append(cmd))
    assert not ownership._link({"name": "plab-s1", "ifindex": 6}, None, True)
    assert ran == []
    assert ownership._link({"name": "plab-s1", "ifindex": 7}, None, True)
    assert ran == [["ip", "link", "del", "plab-s1"]]


def test_dead_runs_are_those_whose_process_is_gone_unless_kept():
    me = ownership.begin_run("alive", None)
    assert me.entries()[0]["pid"] == os.getpid()
    gone = ownership.Ledger("gone")
    gone.add("run", pid=2**22 + 1, start=1)
    kept = ownership.Ledger("kept")
    kept.add("run", pid=2**22 + 2, start=1, keep=True)
    ownership.Ledger(ownership.MONITORING_LEDGER).add("compose", project="protolab")
    assert [lg.run_id for lg in ownership.dead_runs()] == ["gone"]


def _proc_tree(root: Path, modules: list[str] | None, sysctls: dict[str, str]) -> None:
    for k, v in sysctls.items():
        p = root / "proc/sys" / k.replace(".", "/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(v + "\n")
    if modules is not None:
        (root / "proc").mkdir(parents=True, exist_ok=True)
        (root / "proc/modules").write_text("".join(f"{m} 16384 0 - Live 0x0\n" for m in modules))
        for m in modules:
            (root / "sys/module" / m).mkdir(parents=True, exist_ok=True)
            (root / "sys/module" / m / "refcnt").write_text("0\n")


def test_hoststate_unloads_br_netfilter_the_run_loaded_and_resets_sysctls(tmp_path):
    before_root, now_root = tmp_path / "before", tmp_path / "now"
    _proc_tree(before_root, ["bridge"], {"net.ipv4.ip_forward": "1"})
    before = kernelstate.snapshot(before_root)
    assert before["modules"] == {"br_netfilter": "absent", "xt_physdev": "absent"}
    assert before["sysctls"]["net.bridge.bridge-nf-call-iptables"] is None
    _proc_tree(now_root, ["bridge", "br_netfilter", "xt_physdev"],
               {"net.ipv4.ip_forward": "0", "net.bridge.bridge-nf-call-iptables": "1"})  # fmt: skip
    diff = kernelstate.differences(before, kernelstate.snapshot(now_root))
    assert "module br_netfilter: absent before, loaded now" in diff
    ran = []
    done = kernelstate.restore(before, now_root, runner=lambda cmd: ran.append(cmd))
    assert ran == [["modprobe", "-r", "br_netfilter"], ["modprobe", "-r", "xt_physdev"],
                   ["sysctl", "-qw", "net.ipv4.ip_forward=1"]]  # fmt: skip
    assert len(done) == 3


def test_hoststate_leaves_a_module_something_else_uses(tmp_path):
    _proc_tree(tmp_path / "b", [], {})
    before = kernelstate.snapshot(tmp_path / "b")
    _proc_tree(tmp_path / "n", ["br_netfilter"], {})
    (tmp_path / "n/sys/module/br_netfilter/refcnt").write_text("2\n")
    ran = []
    done = kernelstate.restore(before, tmp_path / "n", runner=lambda cmd: ran.append(cmd))
    assert ran == [] and "in use" in done[0]


def test_builtin_modules_are_never_unloaded(tmp_path):
    _proc_tree(tmp_path, None, {"net.bridge.bridge-nf-call-iptables": "1"})  # no /proc/modules: built in
    assert kernelstate.snapshot(tmp_path)["modules"]["br_netfilter"] == "builtin"


def test_a_killed_runs_folder_is_finalized_from_its_rows(tmp_path):
    run_dir = tmp_path / "smoke" / "20261123T000000Z-abcd"
    (run_dir / "raw").mkdir(parents=True)
    manifest = {"experiment": "smoke", "run_id": run_dir.name, "axes": ["rate"], "columns": ["f1_bits_per_second"]}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    rows = JsonLog(run_dir / "rows.jsonl")
    rows.append({"point": "p000", "repetition": 0, "rate": "10Mbit", "f1_bits_per_second": 9.9e6})
    rows.append({"point": "p001", "repetition": 0, "rate": "100Mbit", "f1_bits_per_second": 9.9e7})
    with (run_dir / "rows.jsonl").open("a") as f:
        f.write('{"point": "p002", "rep')  # torn by the kill
    assert finalize_orphan(run_dir, {"pid": 4242})
    summary = json.loads((run_dir / "summary.json").read_text())
    assert not summary["valid"] and "PID 4242" in summary["invalid_reasons"][0] and summary["rows"] == 2
    tidy = (run_dir / "tidy.csv").read_text().splitlines()
    assert tidy[0] == "point,repetition,rate,f1_bits_per_second" and len(tidy) == 3
    assert not finalize_orphan(run_dir, {"pid": 4242})  # a folder with a summary is left alone


def test_an_nft_table_is_removed_only_while_it_exists(monkeypatch):
    present = {"protolab_r1_lab"}
    ran = []
    monkeypatch.setattr(ownership, "probe", lambda cmd, absent, **kw: cmd[-1] in present)
    monkeypatch.setattr(ownership, "run", lambda cmd, **kw: ran.append(cmd))
    entry = {"kind": "nft", "family": "bridge", "name": "protolab_r1_lab"}
    assert ownership._nft(entry, None, False) and ran == []
    assert ownership._nft(entry, None, True)
    assert ran == [["nft", "delete", "table", "bridge", "protolab_r1_lab"]]
    present.clear()
    assert not ownership._nft(entry, None, True) and len(ran) == 1
    assert ownership.describe(entry) == "nft table bridge protolab_r1_lab"


def test_a_zombie_counts_as_gone_not_as_a_process_that_outlived_sigkill():
    """A killed process whose parent (not us: an sshd's, say) has not reaped it yet holds nothing; `destroy` said
    'alive 3 s after SIGKILL' for it and failed."""
    parent = subprocess.Popen(["sh", "-c", "sleep 0 & echo $!; exec sleep 30"], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 5
        while Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.01)
        t0 = time.monotonic()
        assert ownership._kill(child, ownership.start_time(child))
        assert time.monotonic() - t0 < 1
    finally:
        parent.kill()
        parent.wait()


def test_a_dead_runs_helper_sockets_go_and_a_listening_one_stays(tmp_path, monkeypatch):
    """clean SIGKILLs a killed run's link emulators and NIC filter, which then cannot remove their control sockets
    (the kill-point test found them left in the state folder)."""
    import socket

    monkeypatch.setenv("PROTOLAB_STATE_DIR", str(tmp_path))
    (tmp_path / "linkem").mkdir()
    (tmp_path / "nicfilter").mkdir()
    dead = [tmp_path / "linkem" / "4242-q1.sock", tmp_path / "nicfilter" / "4242-lab.sock"]
    for path in dead:
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(path))  # closed without a listener: what a killed helper leaves
    other = tmp_path / "linkem" / "4243-q1.sock"
    listening = tmp_path / "linkem" / "4242-q2.sock"  # a later process of the same pid, alive
    with socket.socket(socket.AF_UNIX) as o, socket.socket(socket.AF_UNIX) as live:
        o.bind(str(other))
        live.bind(str(listening))
        live.listen()
        ownership._unlink_dead_sockets(4242)
        assert not any(p.exists() for p in dead)
        assert other.exists() and listening.exists()
        # any helper's socket nothing listens on, run or not (a lab of a killed test process): listed, then removed
        assert ownership.stale_helper_sockets() == [other]
        assert ownership.stale_helper_sockets(remove=True) == [other] and not other.exists()
        assert listening.exists() and ownership.stale_helper_sockets() == []
