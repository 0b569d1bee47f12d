"""Mounting and unmounting cachefs stores; finding their daemons."""
import os
import re
import resource
import signal
import subprocess
import time

from .core import BenchError, log, now, read_lines, warn


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


class ReferenceMount:
    """libfuse's passthrough_hp (example/passthrough_hp.cc, built by whoever runs the
    bench) mounted over SOURCE, a directory on the store's disk, with its defaults. It
    runs as a child of the bench with --foreground: passthrough_hp 3.14 daemonizes
    otherwise (fuse_daemonize forks before it mounts), and the bench needs the pid of
    the process that serves the requests to read its CPU time. The mountpoint and the
    source are absolute paths. Same attributes as Mount where the measurements read
    them (mnt, daemon_pid, fuse_conn).

    passthrough_hp keeps a descriptor open for every inode the kernel knows and raises its
    own soft limit of descriptors to the hard one; the bench raises the hard limit for it
    (to fs.nr_open, as root): this machine's 20,000 ran out in the second run's creates."""

    def __init__(self, bench, binary, source, mnt, options=()):
        self.bench = bench
        self.binary = binary
        self.options = list(options)   # e.g. --nosplice, its lean form
        self.store = source
        self.mnt = mnt
        self.proc = None
        self.daemon_pid = None
        self.fuse_conn = None
        os.makedirs(source, exist_ok=True)
        os.makedirs(mnt, exist_ok=True)

    def mount(self):
        b = self.bench
        out = open(f"{b.work}/reference.out", "ab")
        try:
            self.proc = subprocess.Popen(self.command(), stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                         preexec_fn=raise_fd_limit)
        except OSError as error:
            raise BenchError(f"cannot run {self.binary}: {error}")
        finally:
            out.close()
        self.daemon_pid = self.proc.pid
        deadline = now() + 10
        while not self.is_mounted():
            if self.proc.poll() is not None or now() >= deadline:
                self.unmount()
                tail = " / ".join(read_lines(f"{b.work}/reference.out")[-3:])
                raise BenchError(f"{os.path.basename(self.binary)} did not mount {self.mnt}: {tail}")
            time.sleep(0.05)
        self.fuse_conn = fuse_conn_id(self.mnt)
        log(f"    mounted {os.path.basename(self.binary)} over {self.store} (pid {self.daemon_pid})")

    def command(self):
        return [self.binary, "--foreground", *self.options, self.store, self.mnt]

    def is_mounted(self):
        return self.mnt in mounted_points()

    def unmount(self):
        """fusermount3 -u, then the daemon exits by itself; if it does not within 10 s (or
        the unmount failed), it is terminated, then killed, and the mount detached."""
        b = self.bench
        if self.proc is None:
            return
        if self.is_mounted():
            for _ in range(5):
                if fusermount(b.work, "-u", self.mnt) == 0:
                    break
                time.sleep(1)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            warn(f"{os.path.basename(self.binary)} still running after unmount; terminating it")
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.proc.pid, sig)
                except OSError:
                    pass
                try:
                    self.proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.is_mounted():
            fusermount(b.work, "-uz", self.mnt)
        self.proc = None
        self.daemon_pid = None
        self.fuse_conn = None

    def check_alive(self):
        if not self.is_mounted():
            raise BenchError(f"{self.mnt} is no longer mounted (did {os.path.basename(self.binary)} exit?)")
        if self.proc is None or self.proc.poll() is not None:
            raise BenchError(f"{os.path.basename(self.binary)} exited; {self.mnt} is stale")


def raise_fd_limit():
    """In a child before exec: the hard limit of descriptors up to fs.nr_open, if allowed."""
    try:
        with open("/proc/sys/fs/nr_open") as f:
            most = int(f.read())
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < most:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, most))
    except (OSError, ValueError):
        pass


def unmount_and_remove(b, mounts):
    """A section's own mounts: each unmounted and its store removed; the main store in use again."""
    for mount in mounts:
        mount.unmount()
        b.remove(mount.store)
    b.use_main_store()
