"""A hosted plan whose caller gets a terminal's Ctrl-C, for tests/hosts/test_process_host.py.

``python ctrl_c_plan.py`` (started in a process group of its own) runs ``where`` in a
`ProcessHost` plan, then sends SIGINT to its whole process group, as a terminal's
Ctrl-C does. On the KeyboardInterrupt it stops gracefully: it calls ``where`` once
more in the same plan, then ends the plan. It prints as JSON whether it was
interrupted, the worker's pid before and after, and the second call's error if any.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the worker imports the toolbox by name

import hosts_toolbox as box

from toolcycle import ToolRuntime
from toolcycle.hosts import ProcessHost

WAIT = 10.0


def main() -> None:
    """Run the plan, interrupt the group, stop gracefully, print what happened."""
    with ToolRuntime() as runtime:
        runtime.register(box.where)
        ctx = runtime.new_context(host=ProcessHost())
        before = runtime.execute("where", {}, ctx).output
        interrupted = False
        try:
            os.killpg(0, signal.SIGINT)  # what a terminal's Ctrl-C sends
            threading.Event().wait(WAIT)  # cut short by the KeyboardInterrupt
        except KeyboardInterrupt:
            interrupted = True
        after = runtime.execute("where", {}, ctx)  # the host's graceful stop goes on
        runtime.end_plan(ctx)
    report = {"interrupted": interrupted, "before": before, "after": after.output}
    print(json.dumps({**report, "error": after.error}))


if __name__ == "__main__":
    main()
