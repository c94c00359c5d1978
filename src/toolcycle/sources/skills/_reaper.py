"""The small parent a skill script runs under, which ends every process the script starts.

This file is not imported by toolcycle: its text is run by a fresh interpreter
(``python -I -S -c <this file> <status fd> <command...>``), so it uses the
standard library only and runs where toolcycle is not importable.

On Linux the reaper makes itself a *child subreaper* (``PR_SET_CHILD_SUBREAPER``):
a process orphaned anywhere below it, by a double fork, or after ``setsid`` or
``setpgrp``, is re-parented to the reaper instead of to ``init``, so none can
slip out of its reach. It runs the command as its child and waits for it; when
the command exits, or when the reaper gets ``SIGTERM`` (the call was cancelled
or timed out), it kills every child it has with ``SIGKILL`` and reaps it, again
and again, until it has no child left, which on Linux means no descendant is
left. Then it writes ``D`` to the status descriptor and exits with the
command's status (dying of the same signal if the command did).

If the command cannot be started, the reaper writes ``E<errno>`` instead and
exits with 127. Elsewhere than Linux there is no subreaper, and the reaper
kills only the children it can see; the caller kills the process group too.
"""

from __future__ import annotations

import os
import signal
import sys
import time

__all__: list[str] = []

_PR_SET_CHILD_SUBREAPER = 36
# Dispositions Python sets to "ignore" that a program expects at their default.
_RESTORED = ("SIGPIPE", "SIGXFSZ", "SIGXFZ")


def _become_subreaper() -> None:
    """Make orphans below this process its children, where the system allows it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # only here: it costs a few milliseconds of start-up

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        return


def _children() -> set[int]:
    """This process's children, read from ``/proc``; none where there is no ``/proc``."""
    found: set[int] = set()
    try:
        threads = os.listdir("/proc/self/task")
    except OSError:
        return found
    for thread in threads:
        try:
            with open(f"/proc/self/task/{thread}/children") as listing:
                found.update(int(pid) for pid in listing.read().split())
        except (OSError, ValueError):
            return found | _children_by_parent()
    return found


def _children_by_parent() -> set[int]:
    """This process's children, read from every process's ``stat`` (a slower way)."""
    me = os.getpid()
    found: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == me:
            found.add(int(name))
    return found


def _end_all() -> None:
    """Kill and reap every child until none is left (orphans keep arriving while it runs).

    A child is only ever killed while it is unreaped, so its pid cannot have
    been reused by another process.
    """
    while True:
        for pid in _children():
            _kill(pid)
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:  # killed but not yet gone
            time.sleep(0.002)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return


def _exit_like(status: int) -> None:
    """Exit as the script did: with its exit code, or of the signal that ended it."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            import resource  # only here: no core file for a copied crash

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if number != signal.SIGKILL:  # whose action is fixed: setting it is an error
                signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
        except (OSError, ValueError):
            pass
        os._exit(128 + number)
    os._exit(os.waitstatus_to_exitcode(status))


def _start(command: list[str], status_fd: int) -> int:
    """Fork and run ``command``; in the child, a failed exec is reported as ``E<errno>``.

    The status descriptor is closed on exec, so a started program never holds it.
    """
    pid = os.fork()
    if pid:
        return pid
    try:
        for name in _RESTORED:
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        os.execvp(command[0], command)
    except OSError as exc:
        os.write(status_fd, f"E{exc.errno or 0}".encode())
    finally:
        os._exit(127)


def main(argv: list[str]) -> None:
    """Run ``argv[1:]``, reporting on the descriptor ``argv[0]``; never returns."""
    status_fd = int(argv[0])
    os.set_inheritable(status_fd, False)
    started: list[int] = []
    stopping: list[int] = []

    def stop(number: int, frame: object) -> None:
        stopping.append(number)
        for pid in started:
            _kill(pid)

    signal.signal(signal.SIGTERM, stop)
    _become_subreaper()
    child = _start(argv[1:], status_fd)  # stdin, stdout, stderr, cwd, env: the reaper's
    started.append(child)
    if stopping:
        stop(signal.SIGTERM, None)
    while True:  # until the script ends; orphans that end meanwhile are reaped
        ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        if ended is None or ended.si_pid == child:
            break
        os.waitpid(ended.si_pid, 0)
    # The script has ended but is not reaped yet, so its pid is still its own;
    # from here on everything is ended anyway, and a late request to stop is moot.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    started.clear()
    _, status = os.waitpid(child, 0)
    _end_all()
    os.write(status_fd, b"D")
    os.close(status_fd)
    if stopping:
        os._exit(0)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
