"""Workload 15 (--shared-tier runs only this): two mounts on one machine stand for two
machines sharing one redis-server (Debian's package, started by the bench on a free
loopback port with its own directory, no persistence, allkeys-lru under 1 GiB).

1. 1,000 x 16 KiB files written on mount A (pool `thumbnails`, no origin); once A's
   write-behind has sent them all, mount B reads them all, 8 readers (each read is a
   LOOKUP that misses locally, a GET to the tier, the file stored, then read): files/s
   against the same 1,000 values fetched by a raw RESP client, pipelined on one
   connection (`redis-cli --pipe`'s way), the limit. B's shared_hits must be 1,000.
   Beside them the floor: the same 1,000 first reads (8 readers) from floorfs
   (bench/floor.py), a FUSE fs mounted fresh for the run that serves 16 KiB files from
   memory and declines OPEN and FLUSH: no FUSE filesystem reads a file it has never been
   asked for faster (a LOOKUP and a READ each).
2. Pool `avatars` with an `exec:` origin that sleeps 50 ms per file: mount A reads 1,000
   files (untimed) and shares them; mount B's cold read of them (8 readers) against a
   third mount C with the same origin and no tier. B must not run the program once.
3. Redis killed mid-run: A reads 1,000 other files of the slow origin (8 readers) while
   writing 1,000 files of its own into `thumbnails`; redis-server is killed (SIGKILL)
   when half the reads have asked the tier. Failed reads plus lost writes (a file
   whose bytes differ afterwards) must be 0, and the pools' shared_errors show it.
"""
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

from .. import measure
from ..core import FAIL, BenchError, log, warn
from ..floor import FloorMount
from ..mounts import Mount, unmount_and_remove

FILES = 1000
FILE_BYTES = 16 << 10
READERS = 8
ORIGIN_DELAY = 0.05


def define(b):
    d = b.results.define
    b.results.define_section("shared tier on redis-server, read on a second mount", "mount B", "RESP client")
    d("tier_read", f"{FILES} x 16K written on A, read on B, {READERS} readers", "files/s", "rate", "0.8")
    b.results.define_section("the floor: first reads from floorfs (16 KiB files in memory)", "floorfs", "RESP client")
    d("tier_floor", f"{FILES} x 16K first reads, {READERS} readers", "files/s", "rate")
    b.results.define_section("shared tier read against the floor", "mount B", "floorfs")
    d("tier_vs_floor", f"{FILES} x 16K read on B, {READERS} readers", "files/s", "rate")
    b.results.define_section("shared tier, exec: origin of 50 ms a file, cold read", "with tier", "without")
    d("tier_origin_cold", f"{FILES} x 16K fetched on A, read on B, {READERS} readers", "files/s", "rate", "10")
    b.results.define_section("shared tier, redis-server killed mid-run", "mount", "")
    d("tier_killed_lost", f"{FILES} reads + {FILES} writes: failed or lost", "files", "atmost", "0")
    d("tier_killed_errors", "shared_errors counted (both pools)", "errors", "abs")


# ------------------------------------------------------------ the server --
def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """redis-server on a free loopback port, in WORK/redis; `kill()` SIGKILLs it."""

    def __init__(self, b):
        if not shutil.which("redis-server"):
            raise BenchError("redis-server is missing: apt-get install redis-server (scripts/lib/install-deps.sh "
                             "installs it)")
        self.directory = f"{b.work}/redis"
        os.makedirs(self.directory, exist_ok=True)
        self.port = free_port()
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lru", "--dir", self.directory,
             "--logfile", f"{self.directory}/redis.log"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                if RespClient(self.port).command([b"PING"]) == b"PONG":
                    return
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise BenchError(f"redis-server did not answer on port {self.port}; see {self.directory}/redis.log")

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def kill(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()


class RespClient:
    """A raw RESP2 client: what the tier's reads are set against."""

    def __init__(self, port):
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""

    @staticmethod
    def encode(arguments):
        out = [b"*%d\r\n" % len(arguments)]
        for argument in arguments:
            out.append(b"$%d\r\n%s\r\n" % (len(argument), argument))
        return b"".join(out)

    def command(self, arguments):
        self.socket.sendall(self.encode(arguments))
        return self.reply()

    def pipelined_gets(self, keys):
        """Sends every GET, then reads every reply: one round trip's worth of waiting."""
        self.socket.sendall(b"".join(self.encode([b"GET", key]) for key in keys))
        return [self.reply() for _ in keys]

    def fill(self, count):
        while len(self.buffer) < count:
            chunk = self.socket.recv(1 << 20)
            if not chunk:
                raise OSError("redis-server closed the connection")
            self.buffer += chunk

    def line(self):
        while b"\r\n" not in self.buffer:
            self.fill(len(self.buffer) + 1)
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b":"):
            return rest
        if kind == b"-":
            raise OSError(rest.decode(errors="replace"))
        if kind == b"$":
            length = int(rest)
            if length < 0:
                return None
            self.fill(length + 2)
            value, self.buffer = self.buffer[:length], self.buffer[length + 2:]
            return value
        raise OSError(f"unexpected reply {line[:40]!r}")

    def close(self):
        self.socket.close()


# ---------------------------------------------------------------- helpers --
def read_in_parallel(b, paths):
    """cat of every path, READERS processes; seconds, or FAIL."""
    listing = f"{b.work}/tier-read.in"
    with open(listing, "w") as f:
        f.write("".join(f"{path}\n" for path in paths))
    per_process = max(1, len(paths) // READERS)
    t0 = time.monotonic()
    if b.steps.run(None, ["xargs", "-P", str(READERS), "-n", str(per_process), "cat"], stdin=listing) != 0:
        return FAIL
    return round(time.monotonic() - t0, 4)


def wait_until_shared(pool, written_bytes, most=120):
    """Waits until POOL's write-behind has sent WRITTEN_BYTES and has nothing queued."""
    deadline = time.monotonic() + most
    while time.monotonic() < deadline:
        if (measure.cache_attr_int(pool, "shared_bytes_written") == written_bytes
                and measure.cache_attr_int(pool, "shared_queue") == 0):
            return True
        time.sleep(0.1)
    return False


def content(name):
    """FILE_BYTES that tell NAME's file from every other."""
    seed = name.encode()
    return (seed * (FILE_BYTES // len(seed) + 1))[:FILE_BYTES]


def write_slow_origin(b):
    """WORK/slow-origin: the files and an exec: program that sleeps 50 ms before each file
    (a `--size` answers at once) and counts the files it served in WORK/slow-origin.calls."""
    root = f"{b.work}/slow-origin"
    for folder in ("shared", "late"):
        os.makedirs(f"{root}/files/{folder}", exist_ok=True)
        for i in range(FILES):
            with open(f"{root}/files/{folder}/f{i}", "wb") as f:
                f.write(content(f"{folder}/f{i}"))
    program = f"{root}/origin.sh"
    calls = f"{root}.calls"
    open(calls, "w").close()
    with open(program, "w") as f:
        f.write(f"""#!/bin/sh
if [ "$1" = --size ]; then
  [ -f '{root}/files/'"$2" ] || exit 44
  exec stat -c %s '{root}/files/'"$2"
fi
[ -f '{root}/files/'"$1" ] || exit 44
sleep {ORIGIN_DELAY}
echo "$1" >> '{calls}'
exec cat '{root}/files/'"$1"
""")
    os.chmod(program, 0o755)
    return program, calls


def count_lines(path):
    with open(path, "rb") as f:
        return f.read().count(b"\n")


# ------------------------------------------------------------------- runs --
def run_shared_tier(b):
    redis = RedisServer(b)
    mounts = {side: Mount(b, f"{b.work}/tier-{side}-store", f"{b.work}/tier-{side}-mnt") for side in "abc"}
    try:
        for side, mount in mounts.items():
            mount.mount(["--pool", "thumbnails=0", "--pool", "avatars=0"])
        program, calls = write_slow_origin(b)
        for side, mount in mounts.items():
            if not measure.set_cache_attr(f"{mount.mnt}/avatars", "origin", f"exec:{program}"):
                raise BenchError(f"cannot set the origin of {mount.mnt}/avatars")
            if side != "c":
                for pool in ("thumbnails", "avatars"):
                    if not measure.set_cache_attr(f"{mount.mnt}/{pool}", "shared", redis.url):
                        raise BenchError(f"cannot set the shared tier of {mount.mnt}/{pool}")
        for rep in range(1, b.opts.repeat + 1):
            log(f"==> run {rep}/{b.opts.repeat}: shared tier")
            run_tier_read(b, redis, mounts, rep)
            run_origin_cold(b, mounts, calls, rep)
        run_redis_killed(b, redis, mounts)
        for key in ("tier_read", "tier_origin_cold", "tier_killed_lost", "tier_killed_errors"):
            b.results.progress(key)
    finally:
        unmount_and_remove(b, mounts.values())
        redis.kill()


def run_tier_read(b, redis, mounts, rep):
    a, bee = (f"{mounts[side].mnt}/thumbnails" for side in "ab")
    folder = f"run{rep}"
    os.makedirs(f"{a}/{folder}")
    os.makedirs(f"{bee}/{folder}")   # directories are made locally; the tier holds files
    before = measure.cache_attr_int(a, "shared_bytes_written") or 0
    for i in range(FILES):
        with open(f"{a}/{folder}/f{i}", "wb") as f:
            f.write(content(f"{folder}/f{i}"))
    if not wait_until_shared(a, before + FILES * FILE_BYTES):
        warn("mount A did not send its files to the tier within 120 s")
        b.results.record("tier_read", "mount", FAIL)
        return
    hits = measure.cache_attr_int(bee, "shared_hits") or 0
    seconds = read_in_parallel(b, [f"{bee}/{folder}/f{i}" for i in range(FILES)])
    got = (measure.cache_attr_int(bee, "shared_hits") or 0) - hits
    if seconds != FAIL and got != FILES:
        warn(f"mount B read {got} of {FILES} files from the tier")
        seconds = FAIL
    b.results.record("tier_read", "mount", measure.per_second(FILES, seconds))
    b.results.record("tier_vs_floor", "mount", measure.per_second(FILES, seconds))

    client = RespClient(redis.port)
    try:
        keys = [f"cachefs:1:thumbnails/{folder}/f{i}".encode() for i in range(FILES)]
        t0 = time.monotonic()
        values = client.pipelined_gets(keys)
        seconds = round(time.monotonic() - t0, 4)
    finally:
        client.close()
    whole = sum(1 for value in values if value is not None and len(value) > FILE_BYTES)
    if whole != FILES:
        warn(f"the RESP client found {whole} of {FILES} values")
        seconds = FAIL
    b.results.record("tier_read", "direct", measure.per_second(FILES, seconds))
    b.results.record("tier_floor", "direct", measure.per_second(FILES, seconds))
    run_floor_read(b, rep)


def run_floor_read(b, rep):
    """The same first reads from floorfs, mounted for this run only (so every read is a
    LOOKUP and a READ, as B's are)."""
    floor = FloorMount(b, f"{b.work}/tier-floor-{rep}", FILE_BYTES, FILES)
    floor.mount()
    try:
        seconds = read_in_parallel(b, [f"{floor.mnt}/f{i:07d}" for i in range(FILES)])
    finally:
        floor.unmount()
    b.results.record("tier_floor", "mount", measure.per_second(FILES, seconds))
    b.results.record("tier_vs_floor", "direct", measure.per_second(FILES, seconds))


def run_origin_cold(b, mounts, calls, rep):
    """A reads the origin's files (untimed; in the first run they reach the tier), then B
    (every read a tier hit) and C (no tier: every read runs the program). The copies of an
    earlier run are removed first on every mount, so each run's reads are cold."""
    a, bee, c = (f"{mounts[side].mnt}/avatars" for side in "abc")
    names = [f"shared/f{i}" for i in range(FILES)]
    for pool in (a, bee, c):
        for name in names:
            try:
                os.remove(f"{pool}/{name}")     # a later run: the files of the last one go first
            except FileNotFoundError:
                pass
        os.makedirs(f"{pool}/shared", exist_ok=True)
    before = measure.cache_attr_int(a, "shared_bytes_written") or 0
    if read_in_parallel(b, [f"{a}/{name}" for name in names]) == FAIL:
        b.results.record("tier_origin_cold", "mount", FAIL)
        return
    if rep == 1 and not wait_until_shared(a, before + FILES * FILE_BYTES):
        warn("mount A did not send the origin's files to the tier within 120 s")
        b.results.record("tier_origin_cold", "mount", FAIL)
        return
    runs_before = count_lines(calls)
    seconds = read_in_parallel(b, [f"{bee}/{name}" for name in names])
    if seconds != FAIL and count_lines(calls) != runs_before:
        warn(f"mount B ran the origin's program {count_lines(calls) - runs_before} times")
        seconds = FAIL
    b.results.record("tier_origin_cold", "mount", measure.per_second(FILES, seconds))
    b.results.record("tier_origin_cold", "direct",
                     measure.per_second(FILES, read_in_parallel(b, [f"{c}/{name}" for name in names])))


def run_redis_killed(b, redis, mounts):
    log("    redis-server killed mid-run")
    a = mounts["a"].mnt
    failed = []
    reads_asked = threading.Event()

    def read(names):
        for name in names:
            try:
                with open(f"{a}/avatars/{name}", "rb") as f:
                    if f.read() != content(name):
                        failed.append(f"read {name}: other bytes")
            except OSError as error:
                failed.append(f"read {name}: {error}")

    def write():
        os.makedirs(f"{a}/thumbnails/killed", exist_ok=True)
        for i in range(FILES):
            with open(f"{a}/thumbnails/killed/f{i}", "wb") as f:
                f.write(content(f"killed/f{i}"))

    errors_before = sum(measure.cache_attr_int(f"{a}/{pool}", "shared_errors") or 0 for pool in ("thumbnails", "avatars"))
    misses_before = measure.cache_attr_int(f"{a}/avatars", "shared_misses") or 0
    os.makedirs(f"{a}/avatars/late", exist_ok=True)
    names = [f"late/f{i}" for i in range(FILES)]
    threads = [threading.Thread(target=read, args=(names[i::READERS],)) for i in range(READERS)]
    threads.append(threading.Thread(target=write))
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not reads_asked.is_set():
        misses = (measure.cache_attr_int(f"{a}/avatars", "shared_misses") or 0) - misses_before
        if misses >= FILES // 2:
            reads_asked.set()
        else:
            time.sleep(0.05)
    redis.kill()
    log(f"    killed redis-server after {FILES // 2} of the reads had asked it")
    for thread in threads:
        thread.join()
    lost = 0
    for i in range(FILES):
        try:
            with open(f"{a}/thumbnails/killed/f{i}", "rb") as f:
                lost += f.read() != content(f"killed/f{i}")
        except OSError:
            lost += 1
    for line in failed[:5]:
        warn(line)
    if lost:
        warn(f"{lost} of the {FILES} files written while redis-server died differ or are gone")
    b.results.record("tier_killed_lost", "mount", len(failed) + lost)
    errors = sum(measure.cache_attr_int(f"{a}/{pool}", "shared_errors") or 0 for pool in ("thumbnails", "avatars"))
    b.results.record("tier_killed_errors", "mount", errors - errors_before if errors - errors_before > 0 else FAIL)
