"""The measurements: each returns one number, or FAIL with a warning."""
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass

from .core import FAIL, elapsed, now, read_lines, warn


# ------------------------------------------------------------------- fio --
def fio_run(b, *args):
    """fio through the page cache; invalidate=0 so a warm run really is warm, and
    fallocate=none so both sides do plain writes. Output: one terse v3 line."""
    return b.steps.run(f"{b.work}/fio.out", ["fio", "--name=bench", "--ioengine=psync", "--invalidate=0",
                                             "--fallocate=none", "--output-format=terse", "--terse-version=3",
                                             *args]) == 0


def fio_field(b, n, divisor):
    """Field N (from 1) of the last fio output, divided."""
    for line in read_lines(f"{b.work}/fio.out"):
        fields = line.split(";")
        if len(fields) >= n:
            try:
                return round(float(fields[n - 1]) / divisor, 1)
            except ValueError:
                pass
    return FAIL


def seq_read(b, path):
    """MiB/s of one sequential 1 MiB read of the file."""
    if fio_run(b, f"--filename={path}", "--rw=read", "--bs=1M", f"--size={b.opts.seq_mib << 20}"):
        return fio_field(b, 7, 1024)        # field 7: read KiB/s
    warn(f"seq read of {path} failed")
    return FAIL


def rand_read(b, path, uncached=False):
    """IOPS of time-based random 4 KiB reads of the file. uncached: a quarter of its
    blocks instead, each once (fio's random map), so that from dropped caches no read
    finds its block cached (a timed run reads the whole file within seconds)."""
    amount = [f"--io_size={b.opts.seq_mib << 18}"] if uncached else ["--time_based", f"--runtime={b.opts.rand_seconds}"]
    if fio_run(b, f"--filename={path}", "--rw=randread", "--bs=4k", f"--size={b.opts.seq_mib << 20}", *amount):
        return fio_field(b, 8, 1)           # field 8: read IOPS
    warn(f"random read of {path} failed")
    return FAIL


def seq_write(b, path, fsync):
    """MiB/s of sequential 1 MiB writes of a new file; fsync: end_fsync 0 or 1
    (fio's runtime includes that final fsync)."""
    if fio_run(b, f"--filename={path}", "--rw=write", "--bs=1M", f"--size={b.opts.write_mib << 20}",
               f"--end_fsync={fsync}"):
        return fio_field(b, 48, 1024)       # field 48: write KiB/s
    warn(f"seq write of {path} failed")
    return FAIL


def dd_write(b, path, fsync):
    """MiB/s of `dd bs=1M` into a new file, opened write-only; fsync: conv=fsync.
    The time is dd's own (from its first write to its last, or to the fsync),
    without process startup."""
    out = f"{b.work}/dd.out"
    cmd = ["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={b.opts.write_mib}"]
    if fsync:
        cmd.append("conv=fsync")
    value = FAIL
    if b.steps.run(out, cmd, stderr="stdout") == 0:
        seconds = 0.0
        for line in read_lines(out):
            if "copied" in line:
                words = line.split()
                for i, w in enumerate(words):
                    if w == "s," and i > 0:
                        seconds = float(words[i - 1].replace(",", "."))
        if seconds > 0:
            value = round(b.opts.write_mib / seconds, 1)
    if value == FAIL:
        lines = read_lines(out)
        warn(f"dd write of {path} failed: {lines[-1] if lines else ''}")
    return value


def warm_file(b, path):
    """Reads the file once, untimed, so that a following warm measurement finds it
    in the page cache (fio runs with invalidate=0, so it keeps it), and checks with
    fincore that all of it is there. Through the mount this is the FUSE file's own
    cache (cachefs opens with keep_cache)."""
    if b.steps.run(f"{b.work}/warm.out", ["fio", "--name=warm", "--ioengine=psync", "--invalidate=0", "--rw=read",
                                          "--bs=1M", f"--filename={path}", "--output-format=terse",
                                          "--terse-version=3"]) != 0:
        warn(f"warming {path} failed")
        return False
    if not shutil.which("fincore"):
        return True
    size = os.stat(path).st_size
    result = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path],
                            capture_output=True, text=True)
    try:
        res = int(result.stdout.strip()) if result.returncode == 0 else 0
    except ValueError:
        res = 0
    if res < size:
        warn(f"{path}: only {res} of {size} bytes in the page cache after reading it")
    return True


# ------------------------------------------------------------ daemon CPU --
@dataclass
class CpuSample:
    """The daemon's CPU as utime + stime (clock ticks, includes threads that have
    exited) and as the sum of its live threads' run time in nanoseconds
    (/proc/PID/task/*/schedstat, field 1), with their ids."""
    ticks: int
    ns: int
    tids: frozenset


def daemon_cpu_sample(pid):
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(") ", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])   # utime, stime
    except (OSError, IndexError, ValueError):
        return None
    ns, tids = 0, set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns += int(f.read().split()[0])
            tids.add(tid)
        except (OSError, IndexError, ValueError):
            continue
    return CpuSample(ticks, ns, frozenset(tids))


def cpu_per_op(before, after, n):
    """µs of daemon CPU per operation between two samples. The nanoseconds are used
    when no thread exited in between (ticks are 10 ms: too coarse for 1,000 stats
    of 20 µs)."""
    if before is None or after is None:
        return FAIL
    if before.tids - after.tids:
        return round((after.ticks - before.ticks) / os.sysconf("SC_CLK_TCK") / n * 1e6, 1)
    return round((after.ns - before.ns) / n / 1e3, 1)


def wait_daemon_idle(b):
    """Waits (up to 15 s) until the daemon is nearly idle: under 2 ms of CPU in
    0.2 s. After dropping the kernel's dentries it receives a FORGET per inode;
    those must not land in the next timed window."""
    wait_pid_idle(b.mount.daemon_pid)


def wait_pid_idle(pid):
    """Waits (up to 15 s) until the process PID is nearly idle: under 2 ms of CPU in 0.2 s."""
    if not pid:
        return
    prev = daemon_cpu_sample(pid)
    deadline = now() + 15
    while now() < deadline:
        time.sleep(0.2)
        cur = daemon_cpu_sample(pid)
        if prev is None or cur is None:
            return
        # A thread that exited meanwhile takes its run time out of the sum: look again.
        if not prev.tids - cur.tids and cur.ns - prev.ns < 2000000:
            return
        prev = cur
    warn(f"the daemon (pid {pid}) is still busy after 15 s")


def daemon_rss_mib(pid, field="VmRSS"):
    """VmRSS of the daemon (or another field of /proc/PID/status in kB: VmHWM), MiB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return FAIL


def settled_rss_mib(pid, least=12, most=36):
    """VmRSS once the allocator has given back what a load's pages of rows left free and the
    daemon's memory check (every 10 s, Tunables.memoryCheckSeconds) has returned what the
    listing's requests freed: from `least` seconds on, sampled each second, the first sample
    not lower than the one before by 0.5 MiB or more, or the sample at `most` seconds."""
    time.sleep(least - 1)
    last = daemon_rss_mib(pid)
    for _ in range(most - least + 1):
        time.sleep(1)
        current = daemon_rss_mib(pid)
        if not isinstance(current, float) or not isinstance(last, float) or current > last - 0.5:
            return current
        last = current
    return last


# ------------------------------------------------------------ FUSE trace --
def check_fuse_trace():
    """FUSE requests of a mount, counted by the kernel's fuse:fuse_request_send
    tracepoint (perf stat, system-wide, filtered on the connection): the proof that
    a row's operations reach the daemon (or do not). Needs perf and a kernel with
    the fuse tracepoints (perf mounts tracefs itself if it must); without them the
    rows fall back to the daemon's CPU time alone."""
    if not shutil.which("perf"):
        return False
    return subprocess.run(["perf", "stat", "-a", "-x,", "-o", "/dev/null", "-e", "fuse:fuse_request_send",
                           "--", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


# ---------------------------------------------------------- file helper --
@dataclass
class FilesResult:
    value: object          # files/s
    value2: object = None  # unlink -o: files/s until the store held none of their bytes
    cpu_us: object = None  # mount side: the daemon's CPU per operation
    reqs: tuple = None     # mount side, with perf: (all requests, LOOKUPs) sent during the run


def files(b, *args):
    """Files/s of the helper: files(b, [HELPER OPTIONS], MODE, DIR, N, SIZE). On the
    mount side (DIR under the mountpoint) also the daemon's CPU per operation and
    the FUSE requests."""
    args = [str(a) for a in args]
    mode, directory, n = args[-4], args[-3], int(args[-2])
    cmd = [b.files_bin, *args]
    result = FilesResult(FAIL)
    before = None
    on_mount = directory.startswith(b.mount.mnt + "/")
    perf = on_mount and b.fuse_trace and b.mount.fuse_conn is not None
    if perf:
        conn = b.mount.fuse_conn
        cmd = ["perf", "stat", "-a", "-x,", "-o", f"{b.work}/perf.out",
               "-e", "fuse:fuse_request_send", "--filter", f"connection == {conn}",
               "-e", "fuse:fuse_request_send", "--filter", f"connection == {conn} && opcode == 1",
               "--", *cmd]
    if on_mount:
        before = daemon_cpu_sample(b.mount.daemon_pid)
    rc = b.steps.run(f"{b.work}/files.out", cmd)
    if on_mount:
        after = daemon_cpu_sample(b.mount.daemon_pid)
        result.cpu_us = cpu_per_op(before, after, n)
        if perf and rc == 0:
            counts = []
            for line in read_lines(f"{b.work}/perf.out"):
                fields = line.split(",")
                if len(fields) >= 3 and "fuse_request_send" in fields[2]:
                    try:
                        counts.append(int(fields[0]))
                    except ValueError:
                        counts.append(0)
            if len(counts) == 2:
                result.reqs = tuple(counts)
    if rc == 0:
        lines = read_lines(f"{b.work}/files.out")
        fields = lines[0].split() if lines else []
        try:
            result.value = round(n / float(fields[0]), 1)
            if len(fields) == 2:
                result.value2 = round(n / float(fields[1]), 1)
        except (IndexError, ValueError, ZeroDivisionError):
            warn(f"{mode} in {directory}: unexpected output {lines[:1]}")
            result.value = FAIL
            result.value2 = FAIL
    else:
        warn(f"{mode} in {directory} failed")
        result.value2 = FAIL
    return result


# -------------------------------------------------------------- listings --
def listing(b, directory, cmd, expected):
    """Seconds for `CMD... DIR` to list DIR; it must print `expected` lines, or the
    listing is wrong."""
    out = f"{b.work}/listing.out"
    t0 = now()
    if b.steps.run(out, [*cmd, directory], env={"LC_ALL": "C"}) != 0:
        warn(f"{' '.join(cmd)} {directory} failed")
        return FAIL
    t1 = now()
    lines = count_lines(out)
    if lines != expected:
        warn(f"{' '.join(cmd)} {directory} printed {lines} lines, expected {expected}")
        return FAIL
    return elapsed(t0, t1)


def count_lines(path):
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


# ---------------------------------------------------------------- xattrs --
def cache_attr(path, name):
    """The value of user.cache.NAME (as text), or None."""
    try:
        result = subprocess.run(["timeout", "60", "getfattr", "--only-values", "--absolute-names", "-n",
                                 f"user.cache.{name}", path], capture_output=True, text=True,
                                stdin=subprocess.DEVNULL)
    except OSError:
        return None
    if result.returncode != 0:
        return None
    return result.stdout


def cache_attr_int(path, name):
    value = cache_attr(path, name)
    if value is None or not re.fullmatch(r"\s*-?[0-9]+\s*", value):
        return None
    return int(value)


def set_cache_attr(path, name, value):
    return subprocess.run(["setfattr", "-n", f"user.cache.{name}", "-v", value, path],
                          stdin=subprocess.DEVNULL).returncode == 0


def timed(b, cmd):
    """Seconds the command took, or FAIL."""
    t0 = now()
    if b.steps.run(None, cmd) == 0:
        return elapsed(t0, now())
    return FAIL


def per_second(count, seconds):
    if seconds == FAIL:
        return FAIL
    return round(count / seconds, 1)
