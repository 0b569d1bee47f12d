"""Mounting and unmounting cachefs stores; finding their daemons."""
import os
import re
import signal
import subprocess
import time

from .core import BenchError, log, now, warn


def mounted_points():
    """The mountpoints in /proc/mounts (octal escapes decoded)."""
    points = []
    with open("/proc/mounts", encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 2:
                points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1]))
    return points


def processes_matching(pattern):
    """Pids whose command line (argv joined by spaces) matches the regex, as pgrep -f."""
    regex = re.compile(pattern)
    pids = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().rstrip(b"\0").split(b"\0")
        except OSError:
            continue
        if argv and regex.search(" ".join(a.decode(errors="replace") for a in argv)):
            pids.append(int(entry))
    return sorted(pids)


def alive(pid):
    """Whether the process runs. A zombie does not: a daemon that exited stays one until
    its parent (init, once `cachefs mount` has returned) reaps it, and an init that reaps
    late would otherwise hold up every unmount for 30 s and get a dead daemon "terminated"."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class Mount:
    """One store and its mountpoint. The engine workloads use stores of their
    own, one mounted at a time; the bench's `mount` attribute is the one in use."""

    def __init__(self, bench, store, mnt):
        self.bench = bench
        self.store = store
        self.mnt = mnt
        self.daemon_pid = None
        self.fuse_conn = None
        self.mount_seconds = None   # how long the last `cachefs mount` took
        os.makedirs(store, exist_ok=True)
        os.makedirs(mnt, exist_ok=True)

    def is_mounted(self):
        return self.mnt in mounted_points()

    def daemon_pattern(self):
        """Regex for this store's daemon ("cachefs mount STORE MNT ...")."""
        return rf"cachefs mount.* {re.escape(self.store)}( |$)"

    def daemon_running(self):
        if self.daemon_pid and alive(self.daemon_pid):
            return True
        return bool(processes_matching(self.daemon_pattern()))

    def mount(self, pools=None):
        """`cachefs mount` returns once the mount is ready; the daemon then logs
        to STORE/daemon.log. pools: arguments (default --pool data=0)."""
        b = self.bench
        pools = pools or ["--pool", "data=0"]
        options = ",".join(o for o in ["min_free=0", b.opts.mount_opts, b.extra_opts] if o)
        t0 = now()
        rc = b.steps.run(f"{b.work}/mount.out", [b.cachefs, "mount", self.store, self.mnt, *pools, "-o", options])
        t1 = now()
        if rc != 0:
            raise BenchError(f"cachefs mount of {self.store} failed")
        if not self.is_mounted():
            raise BenchError(f"cachefs mount returned but {self.mnt} is not mounted")
        pids = processes_matching(self.daemon_pattern())
        self.daemon_pid = pids[0] if pids else None
        self.fuse_conn = fuse_conn_id(self.mnt)
        self.mount_seconds = round(t1 - t0, 3)
        log(f"    mounted {os.path.basename(self.store)} in {self.mount_seconds:.3f} s "
            f"(daemon pid {self.daemon_pid or '?'})")

    def unmount(self):
        b = self.bench
        if self.is_mounted():
            # "Device busy" just after a killed step is transient: retry, then detach lazily.
            for _ in range(5):
                if fusermount(b.work, "-u", self.mnt) == 0:
                    break
                time.sleep(1)
            if self.is_mounted():
                warn("fusermount3 -u failed; detaching lazily")
                fusermount(b.work, "-uz", self.mnt)
        # The daemon holds the store's lock until it has flushed: wait for it to
        # exit before mounting the store again.
        deadline = now() + 30
        while self.daemon_running():
            if now() >= deadline:
                warn("cachefs daemon still running 30 s after unmount; terminating it")
                if self.daemon_pid:
                    kill_pids([self.daemon_pid])
                break
            time.sleep(0.1)
        self.daemon_pid = None
        self.fuse_conn = None

    def check_alive(self):
        """A dead daemon must stop the bench: measuring on would silently hit the
        empty mountpoint directory (fio even creates missing directories)."""
        if not self.is_mounted():
            raise BenchError(f"{self.mnt} is no longer mounted (did the cachefs daemon exit?)")
        if not self.daemon_running():
            raise BenchError(f"the cachefs daemon exited; {self.mnt} is stale")


def fusermount(work, flag, mnt):
    with open(f"{work}/fusermount.err", "ab") as err:
        return subprocess.run(["fusermount3", flag, mnt], stdout=subprocess.DEVNULL, stderr=err,
                              stdin=subprocess.DEVNULL).returncode


def kill_pids(pids):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        if sig == signal.SIGTERM:
            time.sleep(2)


def fuse_conn_id(mnt):
    """The connection id of the mount as the fuse tracepoints print it (the
    kernel's dev_t, major << 20 | minor), from the st_dev of the mountpoint."""
    try:
        dev = os.stat(mnt).st_dev
    except OSError:
        return None
    return (os.major(dev) << 20) | os.minor(dev)


def unmount_leftovers(work):
    """Whatever else is still mounted below WORK (a mount of another store cut
    short by a signal): unmount it and wait for its daemon."""
    for m in mounted_points():
        if m.startswith(work + "/"):
            if fusermount(work, "-u", m) != 0:
                time.sleep(1)
                if fusermount(work, "-u", m) != 0:
                    fusermount(work, "-uz", m)
    pattern = rf"cachefs mount.* {re.escape(work)}/"
    deadline = now() + 30
    while processes_matching(pattern):
        if now() >= deadline:
            warn(f"a cachefs daemon of {work} still runs 30 s after unmount; terminating it")
            kill_pids(processes_matching(pattern))
            break
        time.sleep(0.1)


def anything_mounted_under(work):
    return any(m.startswith(work + "/") for m in mounted_points())
