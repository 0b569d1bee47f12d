#!/usr/bin/env python3
"""Reads one extended attribute of one file in a tight loop and records each call's latency.

    getxattr_loop.py PATH NAME OUT

Each call is timed with CLOCK_MONOTONIC around os.getxattr alone (the bookkeeping between calls
is not timed). Prints "ready VALUE" on stdout after the first call, then loops until SIGTERM
or SIGINT; then writes OUT: the number of calls (8 bytes), their start times (ns, CLOCK_MONOTONIC,
the clock of time.monotonic_ns in the caller) and their durations (ns), as native int64 arrays,
and prints "done CALLS ERRORS" on stdout. A call that fails or returns another value than the
first is counted in ERRORS and not timed. scripts/bench's daemon latency rows use it
(scripts/lib/bench/sections/latency.py).
"""
import array
import gc
import os
import signal
import sys
import time

stop = False


def _stop(_signum, _frame):
    global stop
    stop = True


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    path, name, out = sys.argv[1], sys.argv[2], sys.argv[3]
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    expected = os.getxattr(path, name)
    print("ready", expected.decode(errors="replace"), flush=True)
    gc.disable()
    starts, durations = array.array("q"), array.array("q")
    clock, getxattr, monotonic = time.clock_gettime_ns, os.getxattr, time.CLOCK_MONOTONIC
    errors = 0
    while not stop:
        t0 = clock(monotonic)
        try:
            value = getxattr(path, name)
        except OSError:
            errors += 1
            continue
        t1 = clock(monotonic)
        if value != expected:
            errors += 1
            continue
        starts.append(t0)
        durations.append(t1 - t0)
    with open(out + ".tmp", "wb") as f:
        f.write(array.array("q", [len(starts)]).tobytes())
        starts.tofile(f)
        durations.tofile(f)
    os.replace(out + ".tmp", out)
    print("done", len(starts), errors, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
