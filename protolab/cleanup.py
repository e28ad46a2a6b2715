"""`protolab clean`: remove exactly what protolab made on this machine, and list what is left.

What was made is in the runs' ledgers (protolab.ownership: every object recorded before it was made), so
this also works after a run was killed with SIGKILL, and a look-alike that protolab did not make (a link
named `plab-x`, a rule commented `protolab-x`, a compose project, a process) is never touched. Docker
containers and networks carrying this instance's label (`protolab.managed=true` for the default instance,
protolab.naming) are ours too (a ledger on tmpfs does not survive a reboot; the containers do); another
instance's (another state folder's) carry another label and are left alone. Host settings a run changed are
restored; the results folder of a run whose process died gets its tidy.csv and an INVALID summary.json from
the rows it had measured. What could not be removed, or whose state could not be told (ownership.Outcome),
keeps its ledger entry and makes `clean` fail naming it.

`clean` takes the instance's lab-state lock: while a live run holds it, clean refuses (exit 75) unless
`--force`, which removes that run's lab under it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from . import engine, naming, ownership
from .errors import DockerUnreachableError, LabBusyError
from .killpoint import killpoint
from .lab import rxcpu
from .ownership import Context, Ledger


def _labelled(ctx: Context, remove: bool) -> list[str]:
    """Containers and networks carrying this instance's label (any of its runs', ledger or not)."""
    return engine.labelled(ctx.client, [f"{naming.LABEL}=true"], remove)


def _targets() -> Path:
    return ownership.state_dir() / "targets" / "lab.json"


def leftovers() -> list[str]:
    """Everything of ours still on the machine, one line each (empty: clean). DockerUnreachableError when the
    engine does not answer (then nothing can be said about containers)."""
    ctx = Context()
    ctx.client  # noqa: B018 (DockerUnreachableError now, before anything is listed)
    found = []
    for ledger in ownership.ledgers():
        found += [f"{item} (run {ledger.run_id})" for item in ledger.left(ctx)]
        found += [f"process {p} (run {ledger.run_id})" for p in ownership.processes_of_run(ledger.run_id)]
    found += _labelled(ctx, remove=False)
    found += [f"stale helper socket {p}" for p in ownership.stale_helper_sockets()]
    from .lab import parts
    from .testbed.federation import remote_root

    # the last two: this machine as a testbed host reached over SSH (its keepers' and its Prometheus's state)
    for root in (parts.state_root(), parts.remote_state_root(), remote_root()):
        if root.is_dir():
            found += [f"lab part state {d}" for d in sorted(root.iterdir())]
    return sorted(set(found))


def clean(verbose: bool = True, force: bool = False) -> list[str]:
    """Remove it all; return what was done. LabBusyError while a live run holds the lab state (unless force);
    DockerUnreachableError after removing what can be removed without Docker."""
    try:
        ownership.LOCK.acquire("clean", hint="`protolab clean --force` removes its lab under it")
    except LabBusyError:
        if not force:
            raise
        return _clean(verbose, forced=True)
    try:
        return _clean(verbose, forced=False)
    finally:
        ownership.LOCK.release()


def _clean(verbose: bool, forced: bool) -> list[str]:
    done: list[str] = []
    failures: list[str] = []
    ctx = Context()
    try:
        ctx.client  # noqa: B018
        docker_error = None
    except DockerUnreachableError as exc:
        docker_error = exc
    ledgers = [
        ledger
        for ledger in ownership.ledgers()
        if forced or not any(e["kind"] == "run" and e["pid"] == os.getpid() for e in ledger.entries())
    ]  # not this very process's own lab
    killpoint("clean")  # test hook (protolab.killpoint), before each step
    if len(ledgers) == len(ownership.ledgers()):
        # receive kthreads a killed lab left in its containers' cgroups, back first: then those cgroups can go
        done += [f"moved napi kthread {p} back to the root cgroup" for p in rxcpu.release_orphans()]
    killpoint("clean")
    if not forced or len(ledgers) == len(ownership.ledgers()):
        from .lab import parts

        # keepers of a lab over several hosts, first: a remote one is reached over its host's SSH session while an
        # emulated host (in a ledger below) still answers
        done += parts.clean_parts(failures)
        done += parts.clean_hosted_parts()  # and this machine's, as a host that was reached over SSH
        from .testbed.federation import remote_root

        if remote_root().is_dir():  # this machine as a host reached over SSH: its Prometheus's targets
            shutil.rmtree(remote_root(), ignore_errors=True)
            done.append(f"removed {remote_root()}")
    for ledger in ledgers:
        killpoint("clean")
        done += _sweep(ledger, ctx, failures)
    done += [f"removed stale helper socket {p}" for p in ownership.stale_helper_sockets(remove=True)]
    killpoint("clean")
    if docker_error is None:
        for item in _labelled(ctx, remove=True):
            done.append(f"removed {item}")
    killpoint("clean")
    if _targets().exists():
        _targets().unlink()
    if verbose:
        for line in done:
            print(line)
        for line in failures:
            print(f"left: {line}")
    if failures:
        if docker_error is not None:
            failures.append(f"Docker objects labelled {naming.LABEL}=true: not looked for: {docker_error}")
        raise ownership_error(failures)
    if docker_error is not None:
        raise docker_error  # no ledger lists a Docker object, and the labelled ones could not be looked for
    return done


def _sweep(ledger: Ledger, ctx: Context, failures: list[str]) -> list[str]:
    done = []
    for pid in ownership.processes_of_run(ledger.run_id):
        if ownership.REMOVERS["process"]({"pid": pid, "start": ownership.start_time(pid)}, ctx, True):
            done.append(f"killed process {pid} (run {ledger.run_id})")
    for o in ledger.remove(None, ctx):
        if o.state == ownership.REMOVED:
            done.append(f"removed {ownership.describe(o.entry)} (run {ledger.run_id})")
        elif o.left:
            failures.append(f"{o.line()} (run {ledger.run_id})")
    return done


def ownership_error(failures: list[str]) -> Exception:
    from .errors import ProtolabError

    return ProtolabError(
        f"{len(failures)} object(s) left, their ledger entries kept: " + "; ".join(failures) + ". Fix what is named "
        "(a tool missing or hung, a held lock, an engine that does not answer) and run `protolab clean` again"
    )
