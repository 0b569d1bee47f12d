"""Shared machinery for scripts/torture: self-checking content, results, the
per-operation watchdog, and the mounts (cachefs daemons and tmpfs) with their
cleanup. Standard library only."""

import contextlib
import errno
import hashlib
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

T0 = time.monotonic()
_print_lock = threading.Lock()
VERBOSE = False


def log(msg):
    with _print_lock:
        print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def vlog(msg):
    if VERBOSE:
        log(msg)


def ename(err):
    """'ENOENT' for an OSError or an errno number."""
    num = err.errno if isinstance(err, OSError) else err
    return errno.errorcode.get(num, str(num)) if num is not None else repr(err)


# ----------------------------------------------------------------- content --
# A file is sha256(body) (32 bytes) + body; body = u64 length of body + MAGIC +
# random payload. Any reader can check a file alone and tell a short read from
# corruption.
HDR = 32
MAGIC = b"CFSTORT1"
MIN_SIZE = 1024
MAX_SIZE = 512 * 1024


def make_content(rng, size=None):
    if size is None:
        size = rng.randint(MIN_SIZE, MAX_SIZE)
    body_len = size - HDR
    body = struct.pack("<Q", body_len) + MAGIC + os.urandom(body_len - 16)
    return hashlib.sha256(body).digest() + body


def check_content(data, st_size=None):
    """Returns (ok, reason, digest). digest (the header) names the version."""
    if st_size is not None and len(data) != st_size:
        if len(data) < st_size:
            return False, f"short read: {len(data)} of st_size {st_size} bytes", None
        return False, f"read {len(data)} bytes past st_size {st_size}", None
    if len(data) < HDR + 16:
        return False, f"file too short to carry a header ({len(data)} bytes)", None
    body = data[HDR:]
    if body[8:16] != MAGIC:
        zero = " (header is zeros)" if not any(data[:HDR + 16]) else ""
        return False, f"bad magic{zero}, {len(data)} bytes", None
    declared = struct.unpack("<Q", body[:8])[0]
    if len(body) < declared:
        return False, f"short: {len(data)} of {declared + HDR} bytes", None
    if len(body) > declared:
        return False, f"long: {len(data)} bytes, header says {declared + HDR}", None
    if hashlib.sha256(body).digest() != data[:HDR]:
        return False, f"checksum mismatch ({len(data)} bytes)", None
    return True, "", data[:HDR]


def read_whole(path, drop_cache=False):
    """Reads a file to EOF; returns (data, st_size at open)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if drop_cache:
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)


def write_whole(path, data, rng, truncate="otrunc"):
    """Writes data in random-sized chunks; close errors are raised.
    truncate: 'otrunc' (open with O_TRUNC) or 'ftruncate' (open, then ftruncate(0))."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate == "otrunc" else 0)
    step = "open"
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        e.step = step
        raise
    closed = False
    off = 0
    try:
        if truncate != "otrunc":
            step = "ftruncate"
            os.ftruncate(fd, 0)
        while off < len(data):
            n = rng.randint(4096, 131072)
            step = f"write at {off}"
            off += os.write(fd, data[off:off + n])
        closed = True
        step = "close"
        os.close(fd)
    except OSError as e:
        e.step = step
        raise
    finally:
        if not closed:
            try:
                os.close(fd)
            except OSError:
                pass


def diagnose(path):
    """What a second look at a file shows (for failure reports)."""
    try:
        st = os.lstat(path)
        out = f"second look: ino {st.st_ino} st_size {st.st_size}"
    except OSError as e:
        return f"second look: stat {ename(e)}"
    try:
        out += f", state {file_state(path)}"
    except OSError as e:
        out += f", state {ename(e)}"
    try:
        data, size = read_whole(path, drop_cache=True)
        ok, reason, _ = check_content(data, size)
        out += ", re-read " + ("valid" if ok else reason)
    except OSError as e:
        out += f", re-read {ename(e)}"
    return out


# ----------------------------------------------------------------- results --
class Results:
    """Checks (pass/fail, counted for the last line) and problem tallies."""

    CATEGORIES = ("torn", "drift", "verify", "lost", "stale", "ghost", "flags",
                  "errors", "hangs", "crashes", "mount", "unmount", "faults", "harness")

    TAGS = {"TORN": "torn", "LOST": "lost", "STALE": "stale", "GHOST": "ghost", "FLAGS": "flags",
            "ERROR": "errors", "HARNESS": "harness", "DRIFT": "drift", "VERIFY": "verify",
            "CRASH": "crashes", "HANG": "hangs", "MOUNT": "mount", "UNMOUNT": "unmount", "FAULT": "faults"}

    def __init__(self):
        self.lock = threading.Lock()
        self.passed = 0
        self.failed = 0
        self.items = {c: 0 for c in self.CATEGORIES}
        self.failures = []      # (check name, first problem lines)
        self.notes = {}         # counters of tolerated things (ENOSPC, ...)
        self.stats = {}

    def check(self, name, problems, category, count=None, show=8):
        """problems: list of strings (empty = pass). count: items to tally
        under category (default len(problems))."""
        with self.lock:
            if not problems:
                self.passed += 1
                vlog(f"ok   {name}")
                return True
            self.failed += 1
            if category is None:        # tag each problem by its first word
                for prob in problems:
                    tag = str(prob).split(" ", 1)[0].upper()
                    self.items[self.TAGS.get(tag, "errors")] += 1
            else:
                self.items[category] += len(problems) if count is None else count
            self.failures.append((name, problems[:show]))
        log(f"FAIL {name}: {len(problems)} problem(s) [{category}]")
        for p in problems[:show]:
            for i, line in enumerate(str(p).splitlines()):
                log(("       " if i == 0 else "         ") + line)
        if len(problems) > show:
            log(f"       ... and {len(problems) - show} more")
        return False

    def note(self, key, n=1):
        with self.lock:
            self.notes[key] = self.notes.get(key, 0) + n

    def stat(self, key, n=1):
        with self.lock:
            self.stats[key] = self.stats.get(key, 0) + n


# ---------------------------------------------------------------- watchdog --
class Watchdog:
    """Every filesystem operation runs inside `with wd.op(desc):`. A monitor
    thread flags any operation older than `limit` seconds as a HANG (once) and
    calls on_hang(desc) (set per phase: it kills the daemon and aborts the
    connection, which makes the stuck syscall return)."""

    def __init__(self, limit):
        self.limit = limit
        self.lock = threading.Lock()
        self.ops = {}
        self.flagged = set()
        self.hangs = []
        self.on_hang = None
        self.counter = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="watchdog", daemon=True)
        self.thread.start()

    @contextlib.contextmanager
    def op(self, desc):
        with self.lock:
            self.counter += 1
            key = self.counter
            self.ops[key] = (desc, time.monotonic(), threading.current_thread().name)
        try:
            yield
        finally:
            with self.lock:
                self.ops.pop(key, None)

    def _run(self):
        while not self._stop.wait(0.2):
            now = time.monotonic()
            with self.lock:
                hung = [(k, d, t, n) for k, (d, t, n) in self.ops.items()
                        if now - t > self.limit and k not in self.flagged]
                for k, *_ in hung:
                    self.flagged.add(k)
            for _, desc, started, thread in hung:
                msg = f"{thread}: `{desc}` has not returned after {now - started:.1f} s"
                self.hangs.append(msg)
                log(f"WATCHDOG {msg}")
                cb = self.on_hang
                if cb:
                    try:
                        cb(msg)
                    except Exception as e:  # never let the watchdog die
                        log(f"WATCHDOG on_hang raised {e!r}")

    def take_hangs(self):
        with self.lock:
            h, self.hangs = self.hangs, []
        return h

    def stop(self):
        self._stop.set()


# ------------------------------------------------------------------ mounts --
MOUNTED_DAEMONS = []    # Daemon objects that may hold a mount
MOUNTED_TMPFS = []      # tmpfs mountpoints we mounted
_reg_lock = threading.Lock()


def _unescape(s):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def mount_points():
    try:
        with open("/proc/mounts") as f:
            return [(_unescape(l.split()[1]), l.split()[2]) for l in f if len(l.split()) > 2]
    except OSError:
        return []


def is_mounted(path):
    path = os.path.realpath(path)
    return any(p == path for p, _ in mount_points())


def run(cmd, timeout=30, check=False):
    """subprocess.run with a timeout; returns CompletedProcess (rc -999 on timeout)."""
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, text=True, timeout=timeout, check=check)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return subprocess.CompletedProcess(cmd, -999, out + f"\n(timed out after {timeout} s)")


def mount_tmpfs(path, size="96m"):
    os.makedirs(path, exist_ok=True)
    r = run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", path])
    if r.returncode != 0:
        raise RuntimeError(f"mount -t tmpfs {path} failed: {r.stdout.strip()}")
    with _reg_lock:
        MOUNTED_TMPFS.append(path)


def unmount_tmpfs(path):
    if is_mounted(path):
        r = run(["umount", path], timeout=20)
        if r.returncode != 0:
            run(["umount", "-l", path], timeout=20)
    with _reg_lock:
        if path in MOUNTED_TMPFS:
            MOUNTED_TMPFS.remove(path)


class MountFailed(Exception):
    pass


# Aborting a FUSE connection must not fork: a child of a process whose threads
# hold files of a wedged mount flushes them as it closes its descriptors (exec,
# close_fds) and never returns. So the abort writes to fusectl, or calls
# umount2(MNT_FORCE) through ctypes.
FUSECTL = "/sys/fs/fuse/connections"
FUSECTL_MOUNTED_BY_US = []


def ensure_fusectl():
    """Mounts fusectl if it is not (call before any thread runs)."""
    if any(p == FUSECTL for p, _ in mount_points()):
        return
    if os.path.isdir(FUSECTL) and run(["mount", "-t", "fusectl", "fusectl", FUSECTL]).returncode == 0:
        FUSECTL_MOUNTED_BY_US.append(FUSECTL)


def release_fusectl():
    while FUSECTL_MOUNTED_BY_US:
        run(["umount", FUSECTL_MOUNTED_BY_US.pop()], timeout=10)


def fuse_connection(mnt):
    """fusectl name (device number) of the FUSE mount on mnt, or None."""
    mnt = os.path.realpath(mnt)
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 4 and _unescape(parts[4]) == mnt and " - fuse" in line:
                    major, minor = (int(x) for x in parts[2].split(":"))
                    return str(os.makedev(major, minor) if major else minor)
    except OSError:
        pass
    return None


def abort_connection(mnt):
    """Ends every pending request of the mount on mnt, without forking."""
    conn = fuse_connection(mnt)
    if conn and os.path.exists(f"{FUSECTL}/{conn}/abort"):
        try:
            with open(f"{FUSECTL}/{conn}/abort", "w") as f:
                f.write("1")
            return True
        except OSError:
            pass
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.umount2(os.fsencode(os.path.realpath(mnt)), 1)     # MNT_FORCE: fuse_umount_begin aborts
        return True
    except Exception:
        return False


def tail(path, n=15, start=0):
    try:
        with open(path, "rb") as f:
            f.seek(start)
            lines = f.read().decode(errors="replace").splitlines()
        return lines[-n:]
    except OSError:
        return []


class Daemon:
    """One `cachefs mount --foreground` process and its mountpoint."""

    def __init__(self, binary, store, mnt, args, log_path, label):
        self.binary, self.store, self.mnt = binary, store, os.path.realpath(mnt)
        self.args, self.log_path, self.label = list(args), log_path, label
        self.p = None
        self.log_offset = 0

    @property
    def pid(self):
        return self.p.pid if self.p else None

    def start(self, deadline=15.0):
        os.makedirs(self.mnt, exist_ok=True)
        left = os.listdir(self.mnt)
        if left and not is_mounted(self.mnt):
            # only our own workers could have written here (after a lazy unmount)
            log(f"harness: mountpoint {self.mnt} not empty ({left[:5]}); clearing it")
            for name in left:
                p = os.path.join(self.mnt, name)
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.unlink(p)
        with open(self.log_path, "ab") as f:
            f.write(f"\n===== torture: {self.label}: mount {time.strftime('%H:%M:%S')} =====\n".encode())
            self.log_offset = f.tell()
        logf = open(self.log_path, "ab")
        cmd = [self.binary, "mount", self.store, self.mnt, "--foreground"] + self.args
        t0 = time.monotonic()
        self.p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
        logf.close()
        with _reg_lock:
            MOUNTED_DAEMONS.append(self)
        while time.monotonic() - t0 < deadline:
            if is_mounted(self.mnt):
                return time.monotonic() - t0
            rc = self.p.poll()
            if rc is not None:
                self._forget()
                raise MountFailed(f"{self.label}: daemon exited with {rc} before the mount appeared; log:\n  "
                                  + "\n  ".join(tail(self.log_path, 10, self.log_offset)))
            time.sleep(0.02)
        self.force_abort()
        raise MountFailed(f"{self.label}: mount did not appear in /proc/mounts within {deadline} s")

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def returncode(self):
        return None if self.p is None else self.p.poll()

    def kill9(self, patience=3.0):
        """SIGKILL; returns None if the daemon died, else what kept it (its
        threads' states) after the connection had to be aborted to free it."""
        if self.p is None:
            return None
        if self.alive():
            try:
                os.kill(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.p.wait(timeout=patience)
            return None
        except subprocess.TimeoutExpired:
            pass
        states = self.thread_states()
        log(f"{self.label}: daemon {self.p.pid} still there {patience:.0f} s after SIGKILL "
            f"(threads: {states}); aborting the FUSE connection")
        abort_connection(self.mnt)
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            log(f"{self.label}: daemon {self.p.pid} survives SIGKILL even after the abort")
        return states or "unknown"

    def lazy_unmount(self):
        if is_mounted(self.mnt):
            r = run(["fusermount3", "-uz", self.mnt], timeout=15)
            if r.returncode != 0 and is_mounted(self.mnt):
                run(["umount", "-l", self.mnt], timeout=15)
        if not self.alive():
            self._forget()

    def force_abort(self):
        """Kill -9, abort the FUSE connection (umount -f ends every pending
        request), lazy unmount."""
        if self.alive():
            try:
                os.kill(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if is_mounted(self.mnt):
            abort_connection(self.mnt)
        self.kill9()
        self.lazy_unmount()

    def unmount(self, timeout=30.0):
        """fusermount3 -u and wait for the daemon; returns (rc or None on hang, message)."""
        msg = ""
        t0 = time.monotonic()
        while is_mounted(self.mnt):
            r = run(["fusermount3", "-u", self.mnt], timeout=timeout)
            if r.returncode == 0:
                break
            msg = r.stdout.strip()
            if time.monotonic() - t0 > 10:
                return None, f"fusermount3 -u kept failing: {msg}"
            time.sleep(0.2)
        try:
            rc = self.p.wait(timeout=max(1.0, timeout - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            return None, f"daemon still running {timeout:.0f} s after fusermount3 -u"
        self._forget()
        return rc, msg

    def log_since_start(self):
        return tail(self.log_path, 100000, self.log_offset)

    def _forget(self):
        with _reg_lock:
            if self in MOUNTED_DAEMONS:
                MOUNTED_DAEMONS.remove(self)

    def thread_states(self):
        """wchan of every daemon thread (for hang reports)."""
        out = {}
        if not self.alive():
            return ""
        try:
            for tid in os.listdir(f"/proc/{self.p.pid}/task"):
                try:
                    with open(f"/proc/{self.p.pid}/task/{tid}/wchan") as f:
                        w = f.read().strip() or "-"
                    with open(f"/proc/{self.p.pid}/task/{tid}/stat") as f:
                        st = f.read().rsplit(")", 1)[1].split()[0]
                    out[f"{st}:{w}"] = out.get(f"{st}:{w}", 0) + 1
                except OSError:
                    pass
        except OSError:
            return ""
        return ", ".join(f"{k} x{v}" for k, v in sorted(out.items()))


def cleanup_all():
    """Unmount every cachefs mount and tmpfs we made. Idempotent."""
    with _reg_lock:
        daemons = list(MOUNTED_DAEMONS)
        tmpfs = list(MOUNTED_TMPFS)
    for d in daemons:       # abnormal paths only: phases unmount cleanly themselves
        try:
            d.force_abort()
            d._forget()
        except Exception as e:
            print(f"torture: cleanup of {d.mnt}: {e!r}", file=sys.stderr)
    for t in reversed(tmpfs):
        try:
            unmount_tmpfs(t)
        except Exception as e:
            print(f"torture: cleanup of tmpfs {t}: {e!r}", file=sys.stderr)
    release_fusectl()


# ------------------------------------------------------------ small helpers --
FIGURES = ("usage", "persistent_usage", "pending_usage", "files", "evicted_files", "evicted_bytes")


def bytes_under(folder):
    """Bytes of the files below `folder`; a file removed while it is walked (the daemon
    removes bytes off the request, at any moment) counts as gone."""
    total = 0
    for directory, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except FileNotFoundError:
                pass
    return total


def figures(path):
    return {k: int(os.getxattr(path, "user.cache." + k).decode() or 0) for k in FIGURES}


def file_state(path):
    return os.getxattr(path, "user.cache.state").decode()


def walk_files(top):
    """Regular files below top (absolute paths); vanishing entries are skipped."""
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            if e.errno == errno.ESTALE:
                continue
            raise
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    yield e.path
            except FileNotFoundError:
                continue


def usage_check(mnt, wd, label, tries=8):
    """(c): for each pool, usage == sum st_size of cached+pinned files,
    persistent_usage == sum of persistent ones, files == count, pending 0.
    Files a read-through pool's origin shows but that were never fetched
    (state "origin") hold nothing and count nowhere.
    Retries until the figures are the same before and after the walk (the
    evictor may be running). Returns list of problems."""
    pools = sorted(n for n in os.listdir(mnt) if os.path.isdir(os.path.join(mnt, n)))
    # RELEASE is asynchronous: give the last closes a moment to reach the daemon
    settle = time.monotonic() + 2
    while time.monotonic() < settle:
        with wd.op(f"{label}: root figures"):
            if figures(mnt)["pending_usage"] == 0:
                break
        time.sleep(0.1)
    problems = []
    for attempt in range(tries):
        problems = []
        stable = True
        for pool in pools:
            pdir = os.path.join(mnt, pool)
            with wd.op(f"{label}: figures of {pool}"):
                before = figures(pdir)
            sums = {"cached": 0, "pinned": 0, "persistent": 0, "pending": 0}
            count = 0
            odd = []
            for path in walk_files(pdir):
                try:
                    with wd.op(f"{label}: stat {path}"):
                        st = os.lstat(path)
                        state = file_state(path)
                except (FileNotFoundError, OSError) as e:
                    if isinstance(e, FileNotFoundError) or e.errno == errno.ESTALE:
                        stable = False
                        continue
                    raise
                if state == "origin":
                    continue
                count += 1
                if state not in sums:
                    odd.append(f"{os.path.relpath(path, mnt)}: state {state!r}")
                    continue
                sums[state] += st.st_size
                if state == "pending":
                    odd.append(f"{os.path.relpath(path, mnt)}: state pending with nothing open")
            with wd.op(f"{label}: figures of {pool}"):
                after = figures(pdir)
            if before != after:
                stable = False
                break
            want_usage = sums["cached"] + sums["pinned"]
            if after["usage"] != want_usage:
                problems.append(f"DRIFT {pool}: user.cache.usage={after['usage']} but cached+pinned files "
                                f"sum to {want_usage} (diff {after['usage'] - want_usage:+d})")
            if after["persistent_usage"] != sums["persistent"]:
                problems.append(f"DRIFT {pool}: user.cache.persistent_usage={after['persistent_usage']} but "
                                f"persistent files sum to {sums['persistent']} "
                                f"(diff {after['persistent_usage'] - sums['persistent']:+d})")
            if after["files"] != count:
                problems.append(f"DRIFT {pool}: user.cache.files={after['files']} but {count} files listed")
            if after["pending_usage"] != 0:
                problems.append(f"DRIFT {pool}: pending_usage={after['pending_usage']} with no file open")
            problems.extend(f"DRIFT {pool}: {o}" for o in odd)
        if stable:
            return problems
        time.sleep(0.3)
    return problems + [f"figures kept changing during {tries} walks (evictor never settled)"]


def verify_store(binary, store, extra=()):
    """Runs cachefs verify (with `extra`: a key, --deep); returns (ok, files_checked, output)."""
    r = run([binary, "verify", store, *extra], timeout=180)
    out = r.stdout.strip()
    m = re.search(r"^clean: (\d+) files? checked", out, re.M)
    ok = r.returncode == 0 and m is not None
    return ok, int(m.group(1)) if m else 0, f"exit {r.returncode}: {out}"
