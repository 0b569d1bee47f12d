"""Workload 12: the latency of a request the daemon serves for a cached file (a getxattr of
user.cache.state) while an eviction pass under s3fifo removes 80 % of a directory that was
not loaded since the mount, beside the same figure idle; once with the cores free and once
with a busy loop per core. Measured once per bench."""
import array
import math
import os
import select
import signal
import subprocess
import sys
import time

from .. import measure
from ..core import FAIL, BenchError, count_tag, elapsed, log, read_lines, warn

POOLS = ["--pool", "data=0", "--pool", "hot=0"]
FILE_SIZE = 1024
POLICY = "s3fifo"
POLL_SECONDS = 0.01


def busy_loops():
    """One busy loop per core."""
    return os.cpu_count() or 2


def variants():
    return (("", ""), ("_busy", f", {busy_loops()} busy loops"))


def define(b):
    o, r = b.opts, b.results
    n = o.nlat
    r.define_section(f"getxattr, {POLICY} evicts {count_tag(n - keep(n))} of {count_tag(n)}", "evicting", "idle")
    for suffix, extra in variants():
        r.define(f"lat_p50{suffix}", f"xattr read p50{extra}", "ms", "abs")
        r.define(f"lat_p99{suffix}", f"xattr read p99{extra}", "ms", "abs")
        r.define(f"lat_max{suffix}", f"xattr read max{extra}", "ms", "max", "10")
        r.define(f"lat_reads{suffix}", f"  reads timed{extra}", "reads", "abs")
        r.define(f"lat_pass{suffix}", f"  pass of {count_tag(n - keep(n))} files{extra}", "s", "abs")


def keep(n):
    """The files the pass leaves: 20 %."""
    return n // 5


def run_latency(b):
    for suffix, _ in variants():
        run_variant(b, suffix)


def files_in(pool):
    """user.cache.files of the pool, read in this process (no getfattr process per poll)."""
    try:
        return int(os.getxattr(pool, "user.cache.files"))
    except (OSError, ValueError):
        return None


def set_attr(path, name, value):
    try:
        os.setxattr(path, f"user.cache.{name}", value.encode())
    except OSError as error:
        raise BenchError(f"setfattr user.cache.{name}={value} on {path}: {error}")


def read_line(proc, seconds):
    """A line of the process's stdout, or None after SECONDS."""
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    if not ready:
        return None
    return proc.stdout.readline().decode(errors="replace").strip()


def stop_process(proc):
    """Terminates a process this section started (its own session) and waits for it."""
    if proc is None or proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def read_samples(path):
    """The reader's output: (starts, durations) in ns."""
    with open(path, "rb") as f:
        count = array.array("q")
        count.fromfile(f, 1)
        starts, durations = array.array("q"), array.array("q")
        starts.fromfile(f, count[0])
        durations.fromfile(f, count[0])
    return starts, durations


def percentiles(starts, durations, t0, t1):
    """(p50, p99, max) in ms and the count of the calls that started within [t0, t1];
    nearest-rank percentiles. None if there are none."""
    window = sorted(d for s, d in zip(starts, durations) if t0 <= s <= t1)
    if not window:
        return None

    def rank(p):
        return window[max(math.ceil(p * len(window)) - 1, 0)]
    return tuple(round(ns / 1e6, 3) for ns in (rank(0.50), rank(0.99), window[-1])) + (len(window),)


def slowest(starts, durations, t0, t1, count=5):
    """The COUNT slowest calls started within [t0, t1], as "START: TOOK" in ms from t0."""
    calls = sorted(((d, s) for s, d in zip(starts, durations) if t0 <= s <= t1), reverse=True)[:count]
    return ", ".join(f"+{(s - t0) / 1e6:.0f}: {d / 1e6:.1f}" for d, s in calls)


def poll_files(pool, until, deadline):
    """Reads the pool's files every POLL_SECONDS until until(files) or the deadline; returns
    the last figure (None if it could not be read) and the monotonic ns at that read."""
    while True:
        files = files_in(pool)
        at = time.monotonic_ns()
        if files is None or until(files) or at >= deadline:
            return files, at
        time.sleep(POLL_SECONDS)


def run_variant(b, suffix):
    """A store built offline with NLAT files of 1 KiB in data/bulk and a 1 KiB file
    hot/probe; mounted again (data/bulk is never looked up: it stays unloaded); data's
    eviction set to s3fifo and its low_watermark to 100; with suffix _busy a busy loop per
    core from here on. A reader (scripts/lib/getxattr_loop.py) reads hot/probe's
    user.cache.state in a loop: LAT_IDLE seconds idle, then data's max_size goes to the
    size of 20 % of the files and the window runs until user.cache.files shows that many.
    Only the calls started within each window count."""
    o, r = b.opts, b.results
    n, kept = o.nlat, keep(o.nlat)
    busy = suffix == "_busy"
    label = f"{busy_loops()} busy loops" if busy else "cores free"
    log(f"==> getxattr latency while {POLICY} evicts {n - kept} of {n} files ({label}; measured once)")
    b.use_store(f"{b.work}/latency-store", f"{b.work}/latency-mnt")
    reader, loops = None, []
    out = f"{b.work}/getxattr-loop.bin"
    evicting = idle = None
    pass_seconds = FAIL
    try:
        mnt = b.mount.mnt
        b.mount.mount(POOLS)
        os.mkdir(f"{mnt}/data/bulk")
        with open(f"{mnt}/hot/probe", "wb") as f:
            f.write(b"x" * FILE_SIZE)
        b.mount.unmount()
        if b.steps.run(f"{b.work}/synthetic.out", ["python3", f"{b.repo_root}/scripts/lib/bench-synthetic-store.py",
                                                   b.mount.store, n, FILE_SIZE, "bulk"]) != 0:
            raise BenchError("building the latency store failed")
        log(f"    built offline: {' '.join(read_lines(f'{b.work}/synthetic.out'))}")
        b.mount.mount(POOLS)
        b.mount.check_alive()
        data, probe = f"{mnt}/data", f"{mnt}/hot/probe"
        files = files_in(data)
        if files != n:
            raise BenchError(f"data holds {files} files after the mount, expected {n}")
        set_attr(data, "low_watermark", "100")
        set_attr(data, "eviction", POLICY)
        active = measure.cache_attr(data, "eviction_active")
        if active is None or active.strip() != POLICY:
            raise BenchError(f"data's eviction_active reads {active!r}, expected {POLICY}")
        measure.wait_daemon_idle(b)
        if busy:
            for _ in range(busy_loops()):
                loops.append(subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                              stdin=subprocess.DEVNULL, start_new_session=True))
        reader = subprocess.Popen([sys.executable, f"{b.repo_root}/scripts/lib/getxattr_loop.py", probe,
                                   "user.cache.state", out], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
        line = read_line(reader, 30)
        if line != "ready cached":
            raise BenchError(f"the getxattr reader of {probe} said {line!r}, expected 'ready cached'")
        time.sleep(0.5)   # the reader is in its loop

        # Idle: nothing else runs; data must not change.
        t0 = time.monotonic_ns()
        files, t1 = poll_files(data, lambda f: f != n, t0 + int(o.lat_idle * 1e9))
        if files != n:
            raise BenchError(f"data went from {n} to {files} files while idle")

        # Evicting: from just before max_size drops until the pass has left KEPT files.
        t2 = time.monotonic_ns()
        set_attr(data, "max_size", str(kept * FILE_SIZE))
        files, t3 = poll_files(data, lambda f: f <= kept, t2 + int(o.step_timeout * 1e9))
        if files is None or files > kept:
            raise BenchError(f"data holds {files} files {o.step_timeout} s after max_size dropped, expected {kept}")
        pass_seconds = elapsed(t2 / 1e9, t3 / 1e9)

        reader.send_signal(signal.SIGTERM)
        try:
            output, _ = reader.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            raise BenchError("the getxattr reader did not stop within 60 s")
        done = output.decode(errors="replace").split()
        if reader.returncode != 0 or len(done) != 3 or done[0] != "done":
            raise BenchError(f"the getxattr reader failed (exit {reader.returncode}, {done})")
        if int(done[2]):
            raise BenchError(f"{done[2]} getxattr calls of {probe} failed or read another value")
        for proc in loops:
            stop_process(proc)
        starts, durations = read_samples(out)
        idle = percentiles(starts, durations, t0, t1)
        evicting = percentiles(starts, durations, t2, t3)
        log(f"    idle {elapsed(t0 / 1e9, t1 / 1e9)} s: p50/p99/max {fmt(idle)} ms; evicting {n - files} files "
            f"in {pass_seconds} s ({files} left): {fmt(evicting)} ms")
        log(f"    slowest while evicting (ms after max_size dropped: ms taken): {slowest(starts, durations, t2, t3)}")
        b.mount.check_alive()
    except (BenchError, OSError) as error:
        warn(f"latency measurement ({label}) failed: {error}")
    finally:
        stop_process(reader)
        for proc in loops:
            stop_process(proc)
        b.mount.unmount()
        b.remove(b.mount.store, b.mount.mnt, out)
        b.use_main_store()
    for key, i in (("lat_p50", 0), ("lat_p99", 1), ("lat_max", 2), ("lat_reads", 3)):
        r.record(f"{key}{suffix}", "mount", evicting[i] if evicting else FAIL)
        r.record(f"{key}{suffix}", "direct", idle[i] if idle else FAIL)
    r.record(f"lat_pass{suffix}", "mount", pass_seconds)


def fmt(figures):
    if not figures:
        return "none"
    return f"{figures[0]} / {figures[1]} / {figures[2]} ({figures[3]} reads)"
