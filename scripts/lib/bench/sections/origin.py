"""Workload 9: read-through from an HTTP origin on loopback, against curl of the
same URLs; then the cached files read again with `revalidate=0` (every open asks the
server, which answers 304) against the same hits without it; then files larger than
the pool's block size, read in blocks.

A pool `web` whose origin is nginx (Debian's package, /usr/sbin/nginx) over WORK/origin
(a folder of the store's disk) on 127.0.0.1, in a store of its own. nginx runs as the
bench's child (no daemon, no master process) with its configuration, pid file, error
log and temp folders under WORK/nginx, so a user who is not root runs it too; it
answers `Range` with 206, as a block fetch needs (Python's http.server ignores it and
sends the whole body). Each figure is set against curl fetching the same URLs from the
same server. The 1 GiB file is sparse: the server reads zeros from the page cache, so
the figure is cachefs's own latency (the lookup's request, the open, the first block).

Blocks: the first MiB of a sparse 4 GiB file (head -c against curl -r), with the bytes
the pool fetched for it (one block plus the read-ahead at most); and 2 GiB streamed
through the pool with its max_size at 256 MiB (cat against curl), its usage sampled
meanwhile and never to exceed that. The 2 GiB file is sparse too (zeros, served from
the page cache): writing 2 GiB of random data for each run would cost more than the
row, and the limit, not the bytes, is what the row checks.
"""
import os
import signal
import socket
import subprocess
import threading
import time

from .. import measure
from ..core import FAIL, BenchError, log, read_lines, warn
from ..results import fmt_value, is_number

NGINX = "/usr/sbin/nginx"
HEAD_GIB = 4            # origin_head_1m: a sparse file of this size, its first MiB read
STREAM_GIB = 2          # origin_stream: a sparse file of this size, read whole
STREAM_POOL_MIB = 256   # ... through the pool with max_size set to this
BLOCK_MIB = 4           # the pool's block_size by default (its xattr is read when it can be)
READ_AHEAD_BLOCKS = 3   # Tunables.readAheadBlocks (Sources/CacheModel/Tunables.swift): the bound the row checks


def define(b):
    o, d = b.opts, b.results.define
    b.results.define_section("read-through, HTTP origin on loopback", "cachefs", "curl")
    d("origin_first", f"first read, {o.origin_big_mib} MiB", "MiB/s", "rate", "0.8")
    d("origin_first_whole", f"first read, {o.origin_big_mib} MiB, block_size 0", "MiB/s", "rate")
    d("origin_ttfb", f"first byte, {o.origin_huge_mib} MiB file", "ms", "max", "50")
    d("origin_small", f"{o.origin_small} x 16K, 8 readers, first read", "files/s", "rate", "0.7")
    b.results.define_section("read-through, against a download to disk", "cachefs", "curl -o FILE")
    d("origin_stored", f"first read, {o.origin_big_mib} MiB", "MiB/s", "rate")
    b.results.define_section("read-through, cached", "cachefs", "disk")
    d("origin_again", f"{o.origin_small} x 16K, 8 readers, second read", "files/s", "rate")
    b.results.define_section("read-through, asking the origin at every open", "revalidate=0", "revalidate=never")
    d("origin_revalidated", f"{o.origin_small} x 16K, 8 readers, cached", "files/s", "rate", "0.8")
    b.results.define_section("read-through in blocks, HTTP origin on loopback", "cachefs", "curl")
    # A time row's ratio is curl's time / cachefs's: cachefs at most 1.2x curl's time is a
    # ratio of at least 1 / 1.2.
    d("origin_head_1m", f"first MiB of a {HEAD_GIB} GiB file", "ms", "time", "0.83")
    d("origin_stream", f"{STREAM_GIB} GiB through a {STREAM_POOL_MIB} MiB pool", "MiB/s", "rate", "0.9")


def free_port():
    """A port nothing listens on now (another process may take it before nginx binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def write_nginx_conf(root, port, origin):
    temp = f"{root}/temp"
    with open(f"{root}/nginx.conf", "w") as f:
        f.write(f"""daemon off;
master_process off;
error_log {root}/error.log;
pid {root}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {origin};
    }}
}}
""")


def start_server(b):
    """Starts nginx over WORK/origin on a free port of 127.0.0.1; returns its URL. If
    another process takes the port between the probe and nginx's bind, nginx exits at
    once and another port is tried."""
    if not os.access(NGINX, os.X_OK):
        raise BenchError(f"{NGINX} is missing: run scripts/lib/install-deps.sh (it installs nginx "
                         "unless CACHEFS_DEPS=run), or apt-get install nginx")
    root = f"{b.work}/nginx"
    try:
        os.makedirs(f"{root}/temp", exist_ok=True)
    except OSError as error:
        raise BenchError(f"cannot make {root}: {error}") from error
    error_log = f"{root}/error.log"
    for _ in range(5):
        port = free_port()
        try:
            write_nginx_conf(root, port, f"{b.work}/origin")
            open(error_log, "w").close()
            with open(error_log, "ab") as stderr:
                server = subprocess.Popen([NGINX, "-e", error_log, "-p", root, "-c", f"{root}/nginx.conf"],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                                          start_new_session=True)
        except OSError as error:
            raise BenchError(f"cannot start nginx: {error}") from error
        b.origin_server = server
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and server.poll() is None:
            if accepts(port):
                return f"http://127.0.0.1:{port}"
            time.sleep(0.05)
        stop_server(b)
    raise BenchError(f"the origin HTTP server (nginx) did not start: {' '.join(read_lines(error_log))}")


def stop_server(b):
    """SIGQUIT (nginx's graceful stop), then SIGKILL after 10 s."""
    server, b.origin_server = b.origin_server, None
    if server is None:
        return
    try:
        server.send_signal(signal.SIGQUIT)
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
        # Sparse, as huge.bin: see the module's docstring.
        with open(f"{origin}/head.bin", "wb") as f:
            f.truncate(HEAD_GIB << 30)
        with open(f"{origin}/stream.bin", "wb") as f:
            f.truncate(STREAM_GIB << 30)
        for i in range(o.origin_small):
            with open(f"{origin}/small/f{i}", "wb") as f:
                f.write(str(i).encode())
                f.truncate(16 << 10)
    except OSError as error:
        raise BenchError(f"cannot write the origin's files: {error}") from error


def files_equal(a, b):
    result = subprocess.run(["cmp", "-s", a, b], stdin=subprocess.DEVNULL)
    return result.returncode == 0


def milliseconds(seconds):
    return round(seconds * 1000, 2) if is_number(seconds) else seconds


def settled_attr_int(path, name, quiet=0.3, most=10):
    """user.cache.NAME once it has stopped moving for `quiet` seconds (a read's read-ahead
    fetches go on after it returns), or after `most` seconds; None if it cannot be read."""
    value = measure.cache_attr_int(path, name)
    deadline = time.monotonic() + most
    while value is not None and time.monotonic() < deadline:
        time.sleep(quiet)
        current = measure.cache_attr_int(path, name)
        if current == value:
            break
        value = current
    return value


def usage_bytes(pool):
    """The pool's user.cache.usage, read in-process (a getfattr per sample would cost a
    fork and exec every 50 ms beside the measured read); None if it cannot be read."""
    try:
        return int(os.getxattr(pool, "user.cache.usage").decode().strip())
    except (OSError, ValueError):
        return None


class UsageSampler:
    """Samples a pool's usage every 0.05 s in a thread while the `with` block runs and
    keeps the largest value seen (None: never read)."""

    def __init__(self, pool):
        self.pool = pool
        self.peak = None
        self.samples = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self):
        while True:
            value = usage_bytes(self.pool)
            if value is not None:
                self.samples += 1
                self.peak = value if self.peak is None else max(self.peak, value)
            if self.stopping.wait(0.05):
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(timeout=70)
        return False


def warm_origin(b, name, size=None):
    """Reads the origin's file NAME (its first SIZE bytes) once, so that nginx serves it from
    the page cache to curl and to cachefs alike. The sparse files are made anew for each run:
    their first read fills the page cache with zero pages (2 GiB took 5 s where a warm read
    takes 1.4), and whichever side read first would pay for both."""
    try:
        with open(f"{b.work}/origin/{name}", "rb") as f:
            left = size
            while left is None or left > 0:
                chunk = f.read(1 << 20 if left is None else min(1 << 20, left))
                if not chunk:
                    break
                if left is not None:
                    left -= len(chunk)
    except OSError as error:
        warn(f"could not read the origin's {name} to warm it: {error}")


def run_head(b, url, web):
    """origin_head_1m: the first MiB of a file larger than a block, and what the pool
    fetched for it: the block read and the read-ahead at most. The bytes either side
    asks for are warmed first (the block and its read-ahead: curl asks for less)."""
    r, mib = b.results, 1 << 20
    warm_origin(b, "head.bin", (1 + READ_AHEAD_BLOCKS) * BLOCK_MIB * mib)
    r.record("origin_head_1m", "direct", milliseconds(measure.timed(
        b, ["curl", "-sf", "-r", f"0-{mib - 1}", "-o", "/dev/null", f"{url}/head.bin"])))
    before = measure.cache_attr_int(web, "fetched_bytes")
    value = milliseconds(measure.timed(b, ["head", "-c", str(mib), f"{web}/head.bin"]))
    after = settled_attr_int(web, "fetched_bytes")
    if before is None or after is None:
        warn(f"could not read user.cache.fetched_bytes of {web}")
    elif value != FAIL:
        block = measure.cache_attr_int(web, "block_size") or BLOCK_MIB * mib
        fetched, most = after - before, (1 + READ_AHEAD_BLOCKS) * block
        log(f"    fetched from the origin for the first MiB: {fetched / mib:.1f} MiB")
        if fetched > most:
            warn(f"the first MiB of head.bin fetched {fetched} bytes, more than one block and its "
                 f"read-ahead ({most})")
            value = FAIL
    r.record("origin_head_1m", "mount", value)
    r.progress("origin_head_1m")
    # Its blocks would stay held in the pool: removing the name drops them (and cancels
    # any read-ahead still under way).
    remove_quietly(f"{web}/head.bin")


def remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        warn(f"could not remove {path}")


def run_stream(b, url, web):
    """origin_stream: a file 8 times the pool's max_size read whole, the pool's usage
    sampled meanwhile; it must never exceed the limit."""
    r, mib = b.results, 1 << 20
    size_mib = STREAM_GIB << 10
    warm_origin(b, "stream.bin")
    r.record("origin_stream", "direct", measure.per_second(size_mib, measure.timed(
        b, ["curl", "-sf", "-o", "/dev/null", f"{url}/stream.bin"])))
    # An empty pool, so that its usage is the stream's blocks alone (the files of the rows
    # before would otherwise be evicted while it runs, under the new limit).
    if b.steps.run(None, ["setfattr", "-n", "user.cache.clear", "-v", "1", web]) != 0:
        warn(f"could not clear {web}")
    if b.steps.run(None, ["setfattr", "-n", "user.cache.max_size", "-v", f"{STREAM_POOL_MIB}M", web]) != 0:
        warn(f"could not set max_size on {web}")
        r.record("origin_stream", "mount", FAIL)
        r.progress("origin_stream")
        return
    limit = measure.cache_attr_int(web, "max_size") or STREAM_POOL_MIB * mib
    start = usage_bytes(web)
    if start is not None and start > limit:
        warn(f"{web} holds {start} bytes before the stream, over its max_size {limit}")
    # No check of the bytes read: the file is all zeros, and cmp of 2 GiB through the mount
    # would take longer than the row and fetch every block again (the pool keeps 256 MiB).
    with UsageSampler(web) as sampler:
        value = measure.per_second(size_mib, measure.timed(b, ["cat", f"{web}/stream.bin"]))
    if sampler.peak is None:
        warn(f"could not read user.cache.usage of {web} during the stream")
    else:
        log(f"    pool usage during the stream: at most {sampler.peak / mib:.1f} MiB "
            f"({sampler.samples} samples; max_size {limit / mib:.0f} MiB)")
        if sampler.peak > limit:
            warn(f"{web} held {sampler.peak} bytes during the stream, over its max_size {limit}")
            value = FAIL
    r.record("origin_stream", "mount", value)
    r.progress("origin_stream")
    remove_quietly(f"{web}/stream.bin")
    if b.steps.run(None, ["setfattr", "-n", "user.cache.max_size", "-v", "0", web]) != 0:
        warn(f"could not set max_size back to 0 on {web}")


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

    # The same read fetched whole (block_size 0: one streamed GET, as before blocks), beside
    # the same curl, so the two ways of fetching are compared in one run.
    r.record("origin_first_whole", "direct", measure.per_second(big, measure.timed(
        b, ["curl", "-sf", "-o", "/dev/null", f"{url}/big.bin"])))
    if b.steps.run(None, ["setfattr", "-n", "user.cache.block_size", "-v", "0", web]) != 0 \
            or b.steps.run(None, ["setfattr", "-n", "user.cache.clear", "-v", "1", web]) != 0:
        warn(f"could not set block_size 0 on {web} and clear it")
        r.record("origin_first_whole", "mount", FAIL)
    else:
        value = measure.per_second(big, measure.timed(b, ["cat", f"{web}/big.bin"]))
        if not files_equal(f"{web}/big.bin", f"{b.work}/origin/big.bin"):
            warn("big.bin fetched whole through the mount differs from the origin")
            value = FAIL
        r.record("origin_first_whole", "mount", value)
    if b.steps.run(None, ["setfattr", "-x", "user.cache.block_size", web]) != 0:
        warn(f"could not restore block_size on {web}")
    r.progress("origin_first_whole")

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

    # Files larger than a block, with the pool's default revalidate (never) again: with 0,
    # each open would add a conditional request the curl side does not make.
    if b.steps.run(None, ["setfattr", "-n", "user.cache.revalidate", "-v", "never", web]) != 0:
        warn(f"could not set revalidate back to never on {web}")
    run_head(b, url, web)
    run_stream(b, url, web)

    b.mount.check_alive()
    b.mount.unmount()
    stop_server(b)
    b.remove(b.mount.store, b.mount.mnt, f"{b.work}/origin", f"{b.work}/nginx")
    b.use_main_store()
