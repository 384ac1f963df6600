"""One student, one budget: each student's sandboxes run under a uid of their own and, where the
host lets the grader make control groups, in a cgroup of their own.

The uid (`student_uid`) makes the per-user limits per student: ``RLIMIT_NPROC`` counts the
processes of one real uid, so a classmate's 255 sleeping processes do not stop this student's
``ptxas`` from forking. The cgroup (`student_cgroup`, cgroup v1 ``cpu``/``pids``/``memory``
controllers, or the v2 unified tree) caps what all of one student's processes take together:
``cpu`` a quota of CPUs (240 spinning processes share it, the other students keep theirs),
``pids`` the process count, ``memory`` the resident memory (also for a GPU exercise, where an
address-space limit would break CUDA). Where neither can be made (not root, a read-only
``/sys/fs/cgroup``, as in most containers), the sandbox keeps its rlimits and every report says
"rlimits only".
"""
from __future__ import annotations

import hashlib
import os
import pwd
from pathlib import Path

UID_BASE = 200_000          # student uids: UID_BASE + a keyed number from the student's name
UID_SPAN = 100_000
CG_ROOT = Path("/sys/fs/cgroup")
CG_NAME = "course-grader"


_ASSIGNED: dict[str, int] = {}


def _uid_number(identity: str) -> int:
    """A number from `identity`, keyed with the course's secret salt (HMAC-SHA256), so that no
    student can choose a name whose number is a classmate's."""
    import hmac

    from .runner import seed_salt
    key = ("uid\0" + seed_salt()).encode()
    return int.from_bytes(hmac.new(key, identity.encode("utf-8", "surrogateescape"),
                                   hashlib.sha256).digest()[:8], "big")


def _free(uid: int, taken: set[int]) -> bool:
    if uid in taken:
        return False
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return True
    return False


def _probe(identity: str, taken: set[int]) -> int:
    n = _uid_number(identity)
    for k in range(UID_SPAN):
        uid = UID_BASE + (n + k) % UID_SPAN
        if _free(uid, taken):
            return uid
    raise RuntimeError("no free uid for a student")


def assign_uids(identities) -> dict[str, int]:
    """Give every student of a class a uid no other student of it has: in sorted-name order each
    takes the first free uid from its own number on (`_probe`), so the same class gets the same
    uids in every run. `student_uid` answers from this table for the names in it."""
    _ASSIGNED.clear()
    taken: set[int] = set()
    for name in sorted(set(identities)):
        _ASSIGNED[name] = uid = _probe(name, taken)
        taken.add(uid)
    return dict(_ASSIGNED)


def student_uid(identity: str) -> int:
    """A uid for `identity` (a student's name), the same in every run (a regrade gets the same),
    no user's of this host; a uid no process of the host runs as is nobody's but the student's.
    Within a class (`assign_uids`) no two students share one."""
    if identity in _ASSIGNED:
        return _ASSIGNED[identity]
    return _probe(identity, set(_ASSIGNED.values()))


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


_MADE: set[Path] = set()


def cleanup() -> None:
    """Remove the students' cgroups that no process is in any more (an rmdir of a busy one
    fails and is left; the v1 controllers' and the v2 tree's parent folders too, once empty)."""
    roots = [CG_ROOT / CG_NAME] + [CG_ROOT / c / CG_NAME for c in ("cpu", "pids", "memory")]
    for r in roots:
        if not r.is_dir():
            continue
        for d in sorted(r.glob("u*")):
            try:
                d.rmdir()
            except OSError:
                pass
        try:
            r.rmdir()
        except OSError:
            pass


def student_cgroup(uid: int, cpus: float, max_processes: int, memory_bytes: int | None
                   ) -> tuple[str, list[str]]:
    """(name, [cgroup.procs files a process joins by writing its pid]) of the student's cgroup,
    made (or reused) with its limits set; ("", []) where none can be made."""
    if os.geteuid() != 0 or not CG_ROOT.is_dir():
        return "", []
    period = 100_000
    if (CG_ROOT / "cgroup.controllers").exists():                       # v2, unified
        parent = CG_ROOT / CG_NAME
        try:
            parent.mkdir(exist_ok=True)
            _write(CG_ROOT / "cgroup.subtree_control", "+cpu +pids +memory")
            _write(parent / "cgroup.subtree_control", "+cpu +pids +memory")
            d = parent / f"u{uid}"
            d.mkdir(exist_ok=True)
        except OSError:
            return "", []
        ok = [_write(d / "cpu.max", f"{int(cpus * period)} {period}"),
              _write(d / "pids.max", str(max_processes))]
        if memory_bytes:
            ok.append(_write(d / "memory.max", str(memory_bytes)))
        _register()
        return (f"{d} (v2)", [str(d / "cgroup.procs")]) if all(ok) else ("", [])
    procs, made = [], []
    settings = {"cpu": {"cpu.cfs_period_us": str(period),
                        "cpu.cfs_quota_us": str(int(cpus * period))},
                "pids": {"pids.max": str(max_processes)},
                "memory": {"memory.limit_in_bytes": str(memory_bytes)} if memory_bytes else {}}
    for ctrl, values in settings.items():
        base = CG_ROOT / ctrl
        if not base.is_dir():
            continue
        d = base / CG_NAME / f"u{uid}"
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if all(_write(d / k, v) for k, v in values.items()):
            procs.append(str(d / "cgroup.procs"))
            made.append(ctrl)
    if "cpu" not in made or "pids" not in made:
        return "", []
    _register()
    return f"{CG_NAME}/u{uid} ({'+'.join(made)}, v1)", procs


def oom_kills(procs: list[str]) -> int:
    """The OOM kills counted so far in the cgroups whose ``cgroup.procs`` files are `procs`: the
    ``oom_kill`` line of the v2 ``memory.events`` or the v1 ``memory.oom_control`` (0 where
    neither can be read)."""
    n = 0
    for p in procs:
        for name in ("memory.events", "memory.oom_control"):
            try:
                text = (Path(p).parent / name).read_text()
            except OSError:
                continue
            n += sum(int(line.split()[1]) for line in text.splitlines()
                     if line.startswith("oom_kill ") and line.split()[1].isdigit())
    return n


def _register() -> None:
    if not _MADE:
        import atexit
        atexit.register(cleanup)
        _MADE.add(CG_ROOT)


__all__ = ["assign_uids", "cleanup", "oom_kills", "student_cgroup", "student_uid"]
