"""Workload 9: read-through from an HTTP origin on loopback, against curl of the
same URLs; then the cached files read again with `revalidate=0` (every open asks the
server, which answers 304) against the same hits without it.

A pool `web` whose origin is `python3 -m http.server` over WORK/origin (a folder
of the store's disk) on 127.0.0.1, in a store of its own. Each figure is set
against curl fetching the same URLs from the same server. The 1 GiB file is
sparse: the server reads zeros from the page cache, so the figure is cachefs's
own latency (the lookup's HEAD, the open, the fetch's first chunk).
"""
import os
import re
import subprocess
import time

from .. import measure
from ..core import FAIL, BenchError, log, read_lines, warn
from ..results import fmt_value, is_number


def define(b):
    o, d = b.opts, b.results.define
    b.results.define_section("read-through, HTTP origin on loopback", "cachefs", "curl")
    d("origin_first", f"first read, {o.origin_big_mib} MiB", "MiB/s", "rate", "0.8")
    d("origin_ttfb", f"first byte, {o.origin_huge_mib} MiB file", "ms", "max", "50")
    d("origin_small", f"{o.origin_small} x 16K, 8 readers, first read", "files/s", "rate", "0.7")
    b.results.define_section("read-through, against a download to disk", "cachefs", "curl -o FILE")
    d("origin_stored", f"first read, {o.origin_big_mib} MiB", "MiB/s", "rate")
    b.results.define_section("read-through, cached", "cachefs", "disk")
    d("origin_again", f"{o.origin_small} x 16K, 8 readers, second read", "files/s", "rate")
    b.results.define_section("read-through, asking the origin at every open", "revalidate=0", "revalidate=never")
    d("origin_revalidated", f"{o.origin_small} x 16K, 8 readers, cached", "files/s", "rate", "0.8")


def start_server(b):
    """Starts the origin server; returns its URL."""
    out, err = f"{b.work}/origin-server.out", f"{b.work}/origin-server.err"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        b.origin_server = subprocess.Popen(
            ["python3", "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", f"{b.work}/origin", "0"],
            stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True)
    for _ in range(100):
        for line in read_lines(out):
            match = re.search(r" port ([0-9]+) ", line)
            if match:
                return f"http://127.0.0.1:{match.group(1)}"
        time.sleep(0.05)
    raise BenchError(f"the origin HTTP server did not start: {' '.join(read_lines(err))}")


def stop_server(b):
    server, b.origin_server = b.origin_server, None
    if server is None:
        return
    try:
        server.terminate()
    except OSError:
        pass
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def parallel(b, command, prefix):
    """The origin's small files as PREFIX/NAME, 125 to a process, 8 processes. The
    names come from the origin folder: an HTTP pool lists only what it has cached.
    Seconds, or FAIL."""
    names = sorted(os.listdir(f"{b.work}/origin/small"))
    listing = f"{b.work}/parallel.in"
    with open(listing, "w") as f:
        f.write("".join(f"{prefix}/{name}\n" for name in names))
    t0 = time.monotonic()
    if b.steps.run(None, ["xargs", "-P", "8", "-n", "125", *command], stdin=listing) != 0:
        return FAIL
    return round(time.monotonic() - t0, 4)


def write_origin_files(b):
    o, origin = b.opts, f"{b.work}/origin"
    os.makedirs(f"{origin}/small", exist_ok=True)
    try:
        with open(f"{origin}/big.bin", "wb") as f:
            for _ in range(o.origin_big_mib):
                f.write(os.urandom(1 << 20))
        with open(f"{origin}/huge.bin", "wb") as f:
            f.truncate(o.origin_huge_mib << 20)
        for i in range(o.origin_small):
            with open(f"{origin}/small/f{i}", "wb") as f:
                f.write(str(i).encode())
                f.truncate(16 << 10)
    except OSError as error:
        raise BenchError(f"cannot write the origin's files: {error}") from error


def files_equal(a, b):
    result = subprocess.run(["cmp", "-s", a, b], stdin=subprocess.DEVNULL)
    return result.returncode == 0


def run_origin(b):
    o, r = b.opts, b.results
    b.use_store(f"{b.work}/origin-store", f"{b.work}/origin-mnt")
    write_origin_files(b)
    url = start_server(b)
    b.mount.mount(["--pool", "web=0", "--origin", f"web={url}/"])
    b.mount.check_alive()
    web = f"{b.mount.mnt}/web"
    big = o.origin_big_mib

    r.record("origin_first", "direct", measure.per_second(big, measure.timed(b, ["curl", "-sf", "-o", "/dev/null",
                                                                                 f"{url}/big.bin"])))
    value = measure.per_second(big, measure.timed(b, ["cat", f"{web}/big.bin"]))
    if not files_equal(f"{web}/big.bin", f"{b.work}/origin/big.bin"):
        warn("big.bin read through the mount differs from the origin")
        value = FAIL
    r.record("origin_first", "mount", value)
    r.progress("origin_first")

    # The same first read against what a script does without cachefs: download into a
    # file on the store's disk (curl -o /dev/null above stores nothing).
    r.record("origin_stored", "direct", measure.per_second(big, measure.timed(
        b, ["curl", "-sf", "-o", f"{b.work}/download.bin", f"{url}/big.bin"])))
    try:
        os.remove(f"{b.work}/download.bin")
    except OSError:
        warn("could not remove the download")
    if b.steps.run(None, ["setfattr", "-n", "user.cache.clear", "-v", "1", web]) != 0:
        warn(f"could not clear {web}")
    r.record("origin_stored", "mount", measure.per_second(big, measure.timed(b, ["cat", f"{web}/big.bin"])))
    r.progress("origin_stored")

    value = measure.timed(b, ["head", "-c", "1", f"{web}/huge.bin"])
    if is_number(value):
        value = round(value * 1000, 2)
    r.record("origin_ttfb", "mount", value)
    # Nobody wants the rest: removing the name cancels the fetch.
    try:
        os.remove(f"{web}/huge.bin")
    except OSError:
        warn(f"could not remove {web}/huge.bin")
    log(f"    {r.label('origin_ttfb'):<34} {fmt_value('ms', value)}")

    n = o.origin_small
    r.record("origin_small", "direct", measure.per_second(n, parallel(b, ["curl", "-sf"], f"{url}/small")))
    r.record("origin_small", "mount", measure.per_second(n, parallel(b, ["cat"], f"{web}/small")))
    r.progress("origin_small")

    r.record("origin_again", "direct", measure.per_second(n, parallel(b, ["cat"], f"{b.work}/origin/small")))
    r.record("origin_again", "mount", measure.per_second(n, parallel(b, ["cat"], f"{web}/small")))
    r.progress("origin_again")
    requests = measure.cache_attr(web, "origin_requests")
    if requests is not None:
        log(f"    origin requests counted by the pool: {requests}")

    # The same hits, then with every open asking the server whether the file changed (a
    # conditional HEAD, answered 304): one round trip to loopback per open.
    r.record("origin_revalidated", "direct", measure.per_second(n, parallel(b, ["cat"], f"{web}/small")))
    if b.steps.run(None, ["setfattr", "-n", "user.cache.revalidate", "-v", "0", web]) != 0:
        warn(f"could not set revalidate on {web}")
    before = measure.cache_attr_int(web, "revalidations")
    r.record("origin_revalidated", "mount", measure.per_second(n, parallel(b, ["cat"], f"{web}/small")))
    r.progress("origin_revalidated")
    after = measure.cache_attr_int(web, "revalidations")
    if before is not None and after is not None:
        log(f"    conditional requests for {n} opens: {after - before}")

    b.mount.check_alive()
    b.mount.unmount()
    stop_server(b)
    b.remove(b.mount.store, b.mount.mnt, f"{b.work}/origin")
    b.use_main_store()
