"""The crash loop of scripts/torture: per cycle, mount, run writers/readers/flag
togglers for a random moment, kill -9 the daemon, remount and check contents,
tracked pinned/persistent files, usage figures, clean unmount and verify.

The model: one Rec per path this run ever created. An operation claims its
Rec (busy) so no two operations race on one path; readers do not claim but
compare the Rec's generation before and after their read. Whatever an
operation that did not return success may have done is left uncertain
(present 'maybe', kind None, midwrite)."""

import contextlib
import errno
import os
import random
import threading
import time
import traceback

import torture_support as S
from torture_support import log, vlog, ename

MiB = 1 << 20
PERSISTENT_BUDGET = 20 * MiB
# How long before a kill a change may still be only in memory: the daemon's group commit
# window (5 ms) plus a commit under this suite's load, with a wide margin.
COMMIT_WINDOW = 0.25
PINNED_BUDGET = 3 * MiB
# where new files go (weights): keep/p is persistent by its directory flag,
# keep/c is cached in an unlimited pool (fills the tmpfs: disk pressure).
AREAS = [("data", 30), ("keep/p", 18), ("keep/p/s1", 8), ("keep/c", 28), ("thumbnails", 8), ("avatars", 8)]
GONE = (errno.ENOENT, errno.ESTALE)


class Abort(Exception):
    """Ends the crash loop (the store can no longer be driven)."""


class RWLock:
    """Writer-preferring: file operations under keep/p share it, a flag on
    the keep/p directory (which stamps every file beneath) takes it alone."""

    def __init__(self):
        self.c = threading.Condition()
        self.readers = 0
        self.writer = False
        self.waiting = 0

    @contextlib.contextmanager
    def shared(self):
        with self.c:
            while self.writer or self.waiting:
                self.c.wait()
            self.readers += 1
        try:
            yield
        finally:
            with self.c:
                self.readers -= 1
                self.c.notify_all()

    @contextlib.contextmanager
    def exclusive(self):
        with self.c:
            self.waiting += 1
            while self.writer or self.readers:
                self.c.wait()
            self.waiting -= 1
            self.writer = True
        try:
            yield
        finally:
            with self.c:
                self.writer = False
                self.c.notify_all()


class Rec:
    __slots__ = ("path", "busy", "gen", "present", "digest", "kind", "midwrite", "partial_ok", "size",
                 "changed_at")

    def __init__(self, path):
        self.path = path
        self.busy = False
        self.gen = 0
        self.present = "no"       # 'yes' (certain) | 'maybe' (evictable or unknown) | 'no' (confirmed gone)
        self.digest = None        # header of the last version whose close returned 0
        self.kind = None          # cached | pinned | persistent | None (unknown)
        self.midwrite = False     # a write did not complete: content may be partial
        self.partial_ok = False   # a write failed while the daemon was alive (app-level partial file)
        self.size = 0
        self.changed_at = 0.0     # when the last operation on it returned (monotonic)

    def must_exist(self):
        return (self.present == "yes" and not self.midwrite and self.digest is not None
                and self.kind in ("pinned", "persistent"))

    def under_keep_p(self):
        return self.path.startswith("keep/p/")

    def describe(self):
        return (f"before the kill: present={self.present} kind={self.kind} midwrite={self.midwrite} "
                f"partial_ok={self.partial_ok} last closed size={self.size}")


class CrashLoop:
    """`encrypted`: the store is an encrypted one (keygen, --encrypt --key-file), and the
    verify after each cycle checks every block's tag (--deep) with its key."""

    def __init__(self, ctx, encrypted=False):
        self.ctx = ctx
        self.res = ctx.results
        self.wd = ctx.wd
        self.encrypted = encrypted
        self.rng = random.Random(ctx.seed * 7919 + (2 if encrypted else 1))
        name = "crash-encrypted" if encrypted else "crash"
        base = os.path.join(ctx.workdir, name)
        self.fs = os.path.join(base, "fs")
        self.store = os.path.join(self.fs, "store")
        self.mnt = os.path.join(base, "mnt")
        self.log_path = os.path.join(ctx.logdir, f"{name}-daemon.log")
        # The key lives beside the store's tmpfs, as a user's would (not in the store).
        self.key_file = os.path.join(base, "store.key")
        self.lock = threading.Lock()
        self.recs = {}
        self.D = None                 # persistent flag of keep/p (None: unknown)
        self.kill_time = 0.0
        self.recent = set()           # paths changed within COMMIT_WINDOW before the kill
        self.keep_rw = RWLock()
        self.seq = 0
        self.cycle = 0
        self.killed = threading.Event()
        self.stop = threading.Event()
        self.live = {}
        self.daemon = None
        self.hang_killed = False
        # totals for the summary
        self.cycles_run = 0
        self.files_checked = 0
        self.tracked_checked = 0
        self.partials_allowed = 0
        self.failed_authentication = 0    # reads after remounts that answered EIO (encrypted store)
        self.last_checked = 0
        self.ops = {}

    # ----------------------------------------------------------- helpers --
    def p(self, rel):
        return os.path.join(self.mnt, rel)

    def count(self, key, n=1):
        with self.lock:
            self.ops[key] = self.ops.get(key, 0) + n

    def live_error(self, desc, err, tolerated=()):
        """An error while the daemon was alive is a failure unless tolerated."""
        if self.killed.is_set():
            return
        if err.errno in tolerated:
            self.res.note(f"{ename(err)} during {desc.split()[0]} (tolerated)")
            return
        step = getattr(err, "step", None)
        with self.lock:
            self.live["errors"].append(f"ERROR {desc}{' (' + step + ')' if step else ''}: {ename(err)} "
                                       f"({err.strerror}) while the daemon was alive")

    def live_problem(self, cat, msg):
        with self.lock:
            self.live[cat].append(msg)

    def claim(self, rng, pred):
        with self.lock:
            cands = [r for r in self.recs.values() if not r.busy and pred(r)]
            if not cands:
                return None
            r = rng.choice(cands)
            r.busy = True
            r.gen += 1
            return r

    def new_rec(self, area, tname):
        with self.lock:
            self.seq += 1
            path = f"{area}/c{self.cycle:03d}-{tname}-{self.seq:05d}.bin"
            r = Rec(path)
            r.busy = True
            r.gen = 1
            self.recs[path] = r
            return r

    def release(self, r):
        with self.lock:
            r.busy = False
            r.gen += 1
            r.changed_at = time.monotonic()

    def keep_cm(self, r):
        return self.keep_rw.shared() if r.under_keep_p() else contextlib.nullcontext()

    def bytes_of(self, kind):
        with self.lock:
            return sum(r.size for r in self.recs.values() if r.kind == kind and r.present != "no")

    def gone_while_kept(self, r, must_exist, what, e):
        """An operation found a file gone that was pinned or persistent, closed and flagged."""
        if must_exist and not self.killed.is_set():
            self.live_problem("lost", f"LOST {r.path}: {what} answered {ename(e)} but it was "
                                      f"{r.kind or 'pinned or persistent'}, closed and flagged")

    # -------------------------------------------------------- operations --
    def op_write(self, r, rng, new=False):
        path = self.p(r.path)
        what = "create" if new else "overwrite"
        data = S.make_content(rng)
        with self.keep_cm(r):
            with self.lock:
                r.midwrite, r.present, r.kind, r.digest = True, "maybe", None, None
            try:
                with self.wd.op(f"{what} {r.path}"):
                    S.write_whole(path, data, rng, self.ctx.overwrite)
            except OSError as e:
                live = not self.killed.is_set()
                self.live_error(f"{what} {r.path}", e, tolerated=(errno.ENOSPC,))
                if live:
                    with self.lock:
                        r.partial_ok = True
                    try:
                        with self.wd.op(f"unlink failed {r.path}"):
                            os.unlink(path)
                        gone = True
                    except OSError as e2:
                        gone = e2.errno in GONE
                        if not gone:
                            self.live_error(f"unlink {r.path} after a failed write", e2)
                    if gone:
                        with self.lock:
                            r.present, r.midwrite, r.partial_ok = "no", False, False
                return
            self.count("writes")
            with self.lock:
                r.digest, r.size, r.midwrite, r.partial_ok = data[:S.HDR], len(data), False, False
            try:
                with self.wd.op(f"getxattr state {r.path}"):
                    state = S.file_state(path)
            except OSError as e:
                if e.errno not in GONE:
                    self.live_error(f"getxattr user.cache.state {r.path}", e)
                return
            with self.lock:
                r.kind = state if state in ("cached", "pinned", "persistent") else None
                if r.kind in ("pinned", "persistent"):
                    r.present = "yes"

    def op_unlink(self, r):
        with self.keep_cm(r):
            was_must = r.must_exist()
            with self.lock:
                r.present = "maybe"
            try:
                with self.wd.op(f"unlink {r.path}"):
                    os.unlink(self.p(r.path))
            except OSError as e:
                if e.errno in GONE:
                    self.gone_while_kept(r, was_must, "unlink", e)
                    with self.lock:
                        r.present, r.kind = "no", None
                else:
                    self.live_error(f"unlink {r.path}", e)
                return
            self.count("unlinks")
            with self.lock:
                r.present, r.kind, r.midwrite, r.partial_ok = "no", None, False, False

    def op_flag(self, r, attr, value):
        with self.keep_cm(r):
            was_must = r.must_exist()
            with self.lock:
                r.kind = None
            try:
                with self.wd.op(f"setxattr {attr}={value} {r.path}"):
                    os.setxattr(self.p(r.path), "user.cache." + attr, value.encode())
            except OSError as e:
                if e.errno in GONE:
                    self.gone_while_kept(r, was_must, "setxattr", e)
                    with self.lock:
                        r.present = "no"
                else:
                    self.live_error(f"setxattr user.cache.{attr}={value} {r.path}", e)
                    with self.lock:
                        r.present = "maybe" if r.present != "no" else "no"
                return
            self.count("flags")
            kind = ("pinned" if attr == "pinned" else "persistent") if value == "1" else "cached"
            with self.lock:
                r.kind = kind
                r.present = "yes" if kind != "cached" else "maybe"

    def op_dirflag(self, value):
        """persistent=value on keep/p: stamps every file beneath (docs/pools-and-files.md: a
        directory covers everything beneath, now and later)."""
        with self.keep_rw.exclusive():
            with self.lock:
                self.D = None
                under = [r for r in self.recs.values() if r.under_keep_p()]
                for r in under:
                    r.kind = None
            try:
                with self.wd.op(f"setxattr persistent={value} keep/p"):
                    os.setxattr(self.p("keep/p"), "user.cache.persistent", value.encode())
            except OSError as e:
                self.live_error(f"setxattr user.cache.persistent={value} keep/p", e)
                with self.lock:
                    for r in under:
                        if r.present != "no":
                            r.present = "maybe"
                return
            self.count("dirflags")
            with self.lock:
                self.D = int(value)
                for r in under:
                    r.changed_at = time.monotonic()
                    if r.present == "no":
                        continue
                    r.kind = "persistent" if value == "1" else "cached"
                    if value == "0":
                        r.present = "maybe"
                maybe = [r for r in under if r.present == "maybe"] if value == "1" else []
            # after the stamp a file that still exists is persistent: ask the
            # daemon (getxattr always reaches it; a stat may come from the kernel cache)
            for r in maybe:
                try:
                    with self.wd.op(f"getxattr state {r.path}"):
                        state = S.file_state(self.p(r.path))
                except OSError as e:
                    if e.errno in GONE:
                        with self.lock:
                            r.present = "no"
                        continue
                    self.live_error(f"getxattr user.cache.state {r.path}", e)
                    break
                with self.lock:
                    if state == "persistent" and not r.midwrite:
                        r.present = "yes"
                    else:
                        r.kind = state if state in ("cached", "pinned", "persistent") else None

    def op_read(self, rng):
        with self.lock:
            cands = [r for r in self.recs.values() if r.present != "no"]
            if not cands:
                return False
            r = rng.choice(cands)
            gen, busy, must, digest, partial, kind = (r.gen, r.busy, r.must_exist(), r.digest,
                                                      r.midwrite or r.partial_ok, r.kind)
        try:
            with self.wd.op(f"read {r.path}"):
                data, size = S.read_whole(self.p(r.path), drop_cache=rng.random() < 0.3)
        except OSError as e:
            live = not self.killed.is_set()
            with self.lock:
                stable = not busy and not r.busy and r.gen == gen
            if e.errno in GONE:
                if live and stable and must:
                    self.live_problem("lost", f"LOST {r.path}: read answered {ename(e)} but it was "
                                              f"{kind}, closed and flagged")
            else:
                self.live_error(f"read {r.path}", e)
            return True
        live = not self.killed.is_set()
        ok, reason, dg = S.check_content(data, size)
        with self.lock:
            stable = not busy and not r.busy and r.gen == gen
        self.count("reads")
        if not live or not stable or partial:
            return True
        self.count("reads verified")
        if not ok:
            try:
                with self.wd.op(f"diagnose {r.path}"):
                    second = S.diagnose(self.p(r.path))
            except OSError as e:
                second = f"second look failed: {ename(e)}"
            self.live_problem("torn", f"TORN {r.path}: {reason} (read while the daemon was alive, "
                                      f"no write in flight, state {kind}, last closed size {r.size}); {second}")
        elif digest is not None and dg != digest:
            self.live_problem("stale", f"STALE {r.path}: read an older version than the last closed one")
        return True

    # ----------------------------------------------------------- workers --
    def writer_step(self, rng, tname):
        # Files the evictor never removes are removed here, so they cannot fill the store.
        for kind, budget in (("persistent", PERSISTENT_BUDGET), ("pinned", PINNED_BUDGET)):
            if self.bytes_of(kind) <= budget:
                continue
            r = self.claim(rng, lambda r, kind=kind: r.kind == kind and r.present != "no")
            if r:
                try:
                    self.op_unlink(r)
                finally:
                    self.release(r)
                return
        x = rng.random()
        r = None
        if x < 0.30:
            r = self.claim(rng, lambda r: r.present != "no" and r.kind in ("cached", "pinned"))
            op = self.op_write
        elif x < 0.40:
            r = self.claim(rng, lambda r: r.present != "no")
            op = lambda r, rng: self.op_unlink(r)
        if r is None:
            area = rng.choices([a for a, _ in AREAS], weights=[w for _, w in AREAS])[0]
            r = self.new_rec(area, tname)
            op = lambda r, rng: self.op_write(r, rng, new=True)
        try:
            op(r, rng)
        finally:
            self.release(r)

    def toggler_step(self, rng):
        x = rng.random()
        if x < 0.45:
            pinned_ok = self.bytes_of("pinned") < PINNED_BUDGET
            r = self.claim(rng, lambda r: r.path.startswith("data/") and r.present != "no" and not r.midwrite
                           and (r.kind == "pinned" or (r.kind == "cached" and pinned_ok)))
            if r:
                try:
                    self.op_flag(r, "pinned", "0" if r.kind == "pinned" else "1")
                finally:
                    self.release(r)
        elif x < 0.88:
            r = self.claim(rng, lambda r: r.under_keep_p() and r.present != "no" and not r.midwrite
                           and r.kind in ("cached", "persistent"))
            if r:
                try:
                    value = "0" if r.kind == "persistent" and rng.random() < 0.5 else "1"
                    self.op_flag(r, "persistent", value)
                finally:
                    self.release(r)
        else:
            value = "1" if self.D != 1 else ("0" if rng.random() < 0.35 else "1")
            self.op_dirflag(value)
        time.sleep(rng.uniform(0, 0.015))

    def reader_step(self, rng):
        if not self.op_read(rng):
            time.sleep(0.01)

    def worker(self, name, step, rng):
        try:
            while not self.stop.is_set() and not self.ctx.abort.is_set():
                step(rng)
        except Exception:
            self.live_problem("errors", f"HARNESS {name}: {traceback.format_exc()}")

    # ------------------------------------------------------------- cycle --
    def on_hang(self, msg):
        d = self.daemon
        states = d.thread_states() if d else ""
        self.hang_killed = True
        self.kill_time = time.monotonic()
        self.killed.set()
        self.stop.set()
        log(f"watchdog: killing the daemon; its threads were: {states}")
        if d:
            d.force_abort()

    def mount_key_args(self):
        # --encrypt makes the first mount's new store an encrypted one; later mounts ignore it.
        return ["--encrypt", "--key-file", self.key_file] if self.encrypted else []

    def verify_args(self):
        return ["--key-file", self.key_file, "--deep"] if self.encrypted else []

    def mount(self, label):
        d = S.Daemon(self.ctx.binary, self.store, self.mnt,
                     ["--pool", "data=8M", "--pool", "keep=0", "-o", "min_free=16M,sweep_interval=1"]
                     + self.mount_key_args(),
                     self.log_path, label)
        try:
            d.start()
        except S.MountFailed as e:
            self.res.check(f"cycle {self.cycle}: {label}", [f"MOUNT {e}"], "mount")
            raise Abort(str(e))
        self.res.check(f"cycle {self.cycle}: {label}", [], "mount")
        self.daemon = d
        return d

    def run(self, cycles):
        S.mount_tmpfs(self.fs, "96m")
        os.makedirs(self.mnt, exist_ok=True)
        if self.encrypted:
            made = S.run([self.ctx.binary, "keygen", self.key_file], timeout=30)
            self.res.check("encrypted crash loop: cachefs keygen",
                           [] if made.returncode == 0 else [f"HARNESS keygen failed: {made.stdout.strip()}"], "harness")
            if made.returncode != 0:
                return
        self.wd.on_hang = self.on_hang
        try:
            for i in range(1, cycles + 1):
                if self.ctx.abort.is_set():
                    break
                self.cycle = i
                self.one_cycle()
                self.cycles_run += 1
        except Abort as e:
            log(f"crash loop stopped at cycle {self.cycle}: {e}")
        finally:
            self.wd.on_hang = None
            if self.daemon:
                self.daemon.force_abort()

    def one_cycle(self):
        c = self.cycle
        t0 = time.monotonic()
        d = self.mount("mount")
        self.killed.clear()
        self.stop.clear()
        self.hang_killed = False
        self.live = {k: [] for k in ("torn", "lost", "stale", "errors")}
        ops_before = dict(self.ops)
        try:
            with self.wd.op("setup dirs"):
                for sub in ("keep/p/s1", "keep/c"):
                    os.makedirs(self.p(sub), exist_ok=True)
            if self.D != 1:
                self.op_dirflag("1")
        except OSError as e:
            self.res.check(f"cycle {c}: setup", [f"ERROR setup: {ename(e)} {e}"], "errors")
        threads = []
        seed = self.rng.randrange(1 << 30)
        for k in range(3):
            threads.append(threading.Thread(target=self.worker, name=f"writer{k}", daemon=True,
                                            args=(f"writer{k}", lambda rng, k=k: self.writer_step(rng, f"w{k}"),
                                                  random.Random(seed + k))))
        for k in range(2):
            threads.append(threading.Thread(target=self.worker, name=f"reader{k}", daemon=True,
                                            args=(f"reader{k}", self.reader_step, random.Random(seed + 10 + k))))
        threads.append(threading.Thread(target=self.worker, name="toggler", daemon=True,
                                        args=("toggler", self.toggler_step, random.Random(seed + 20))))
        for t in threads:
            t.start()
        run_for = self.rng.uniform(0.5, 3.0)
        end = time.monotonic() + run_for
        while time.monotonic() < end and d.alive() and not self.ctx.abort.is_set():
            time.sleep(0.01)
        died = None if d.alive() or self.hang_killed else d.returncode()
        self.kill_time = time.monotonic()
        self.killed.set()
        unkillable = d.kill9(patience=5.0)
        self.stop.set()
        join_end = time.monotonic() + 20
        for t in threads:
            t.join(timeout=max(0.1, join_end - time.monotonic()))
        stuck = [t.name for t in threads if t.is_alive()]
        d.lazy_unmount()
        self.daemon = None

        crash = []
        if died is not None:
            crash.append(f"CRASH the daemon exited with {died} before the kill; log:\n"
                         + "\n".join(S.tail(self.log_path, 12, d.log_offset)))
        hangs = self.wd.take_hangs() + [f"HANG thread {n} did not finish 20 s after the kill" for n in stuck]
        self.res.check(f"cycle {c}: daemon alive until kill -9", crash, "crashes")
        # A kill -9 that lands while the evictor thread is in the kernel's notify_delete can leave
        # that thread waiting on a directory lock held by a request to the dying daemon; the
        # daemon's connection guardian aborts the connection, which frees it.
        if unkillable and not self.hang_killed:
            hangs.append(f"HANG daemon {d.pid} still there 5 s after SIGKILL ({unkillable})")
        self.res.check(f"cycle {c}: no operation hung", hangs, "hangs")
        self.res.check(f"cycle {c}: live reads whole (no torn read)", self.live["torn"], "torn")
        self.res.check(f"cycle {c}: live pinned/persistent never gone, no stale read",
                       self.live["lost"] + self.live["stale"], None)
        self.res.check(f"cycle {c}: no unexpected errno while alive", self.live["errors"], "errors")
        if stuck:
            raise Abort("worker threads stuck")

        # ---------------------------------------------- after the kill --
        with self.lock:
            snap = {p: (r.present, r.digest, r.kind, r.midwrite, r.partial_ok, r.describe(), r.size)
                    for p, r in self.recs.items()}
            # Metadata reaches the index in group commits: what changed within the last
            # commit window before the kill may be lost (docs/crash-safety.md).
            settled = self.kill_time - COMMIT_WINDOW
            self.recent = {p for p, r in self.recs.items() if r.changed_at > settled}
            must = {p: (r.digest, r.kind) for p, r in self.recs.items()
                    if r.must_exist() and p not in self.recent}
        self.hang_killed = False
        d2 = self.mount("remount after kill -9 (recovery)")
        try:
            self.after_crash(snap, must)
        except OSError as e:
            self.res.check(f"cycle {c}: checks after remount", [f"ERROR {ename(e)}: {e}"], "errors")
            d2.force_abort()
            raise Abort(f"checks after remount failed: {e}")
        if self.hang_killed:
            raise Abort("an operation hung after remount")
        rc, msg = d2.unmount()
        self.daemon = None
        problems = []
        if rc is None:
            problems.append(f"HANG unmount: {msg}")
            d2.force_abort()
        elif rc != 0:
            problems.append(f"UNMOUNT daemon exit code {rc} after fusermount3 -u; log:\n"
                            + "\n".join(S.tail(self.log_path, 10, d2.log_offset)))
        self.res.check(f"cycle {c}: clean unmount, exit 0", problems, "hangs" if rc is None else "unmount")
        if rc is None:
            raise Abort("unmount hung")
        ok, n, out = S.verify_store(self.ctx.binary, self.store, self.verify_args())
        self.res.check(f"cycle {c}: cachefs verify clean", [] if ok else [f"VERIFY {out}"], "verify")
        if not ok:
            log(f"cycle {c}: running verify --repair so later cycles start from a consistent store")
            S.run([self.ctx.binary, "verify", self.store, "--repair"] + self.verify_args(), timeout=180)
        ops = {k: v - ops_before.get(k, 0) for k, v in self.ops.items()}
        log(f"cycle {c}: ran {run_for:.2f} s ({ops.get('writes', 0)} writes, {ops.get('reads', 0)} reads, "
            f"{ops.get('flags', 0) + ops.get('dirflags', 0)} flag sets, {ops.get('unlinks', 0)} unlinks), "
            f"kill -9; {self.last_checked} files checked, {len(must)} tracked; verify: {n} files; "
            f"{time.monotonic() - t0:.1f} s")

    def after_crash(self, snap, must):
        c = self.cycle
        wd = self.wd
        # (d) the daemon answers
        with wd.op("ls mount"):
            names = set(os.listdir(self.mnt))
        missing = {"data", "keep", "thumbnails", "avatars"} - names
        self.res.check(f"cycle {c}: daemon answers (ls)",
                       [f"ERROR ls {self.mnt}: pools missing: {sorted(missing)}"] if missing else [], "errors")
        # (a) every file readable with a valid checksum
        observed = {}
        read_errors = []
        for pool in sorted(names):
            for path in S.walk_files(self.p(pool)):
                rel = os.path.relpath(path, self.mnt)
                state = None
                try:
                    with wd.op(f"check read {rel}"):
                        state = S.file_state(path)
                        data, size = S.read_whole(path, drop_cache=True)
                except OSError as e:
                    if e.errno in GONE:
                        continue        # evicted during the scan
                    if self.encrypted and e.errno == errno.EIO:
                        # A block that fails authentication: a torn file detected, judged below
                        # like one whose checksum fails (never served as good).
                        observed[rel] = (state, 0, False, "EIO: a block failed authentication", None)
                        self.failed_authentication += 1
                        continue
                    read_errors.append(f"ERROR read {rel} after remount: {ename(e)} ({e.strerror})")
                    continue
                if state == "pending" and rel not in must:
                    # Evicted (disk pressure) between the scan's lookup and its getxattr: the
                    # kernel still holds the inode, so it reads the kept bytes (kernel_hits)
                    # of a file that is gone, as the GONE case above.
                    log(f"cycle {c}: {rel} was evicted while the check read it (state pending)")
                    continue
                ok, reason, dg = S.check_content(data, size)
                observed[rel] = (state, len(data), ok, reason, dg)
        self.last_checked = len(observed)
        self.files_checked += len(observed)
        torn, other, lost, delete = [], [], [], []
        for rel, (state, size, ok, reason, dg) in sorted(observed.items()):
            s = snap.get(rel)
            if not ok:
                allowed = s is not None and ((s[3] and state == "persistent") or s[4])
                delete.append(rel)
                if allowed:
                    self.partials_allowed += 1
                    continue
                torn.append(f"TORN {rel}: {reason}; state {state} after remount; "
                            + (s[5] if s else "never created by this run"))
                continue
            if s is None:
                other.append(f"GHOST {rel}: present after remount but never created by this run")
                continue
            present, digest, kind, midwrite, partial_ok, desc, _ = s
            if rel in self.recent:
                continue        # changed within the commit window: either version may be kept
            if present == "no":
                other.append(f"GHOST {rel}: unlink returned 0 before the kill but the file is back "
                             f"(state {state})")
            elif not midwrite and digest is not None and dg != digest and rel not in must:
                other.append(f"STALE {rel}: content is not the last version whose close returned 0 "
                             f"(state {state})")
            elif not midwrite and kind is not None and state != kind and rel not in must:
                other.append(f"FLAGS {rel}: state {state} after remount, {kind} before the kill")
        for rel, (digest, kind) in sorted(must.items()):
            self.tracked_checked += 1
            o = observed.get(rel)
            if o is None:
                lost.append(f"LOST {rel}: {kind}, closed and flagged before the kill, missing after remount")
            elif not o[2]:
                pass    # already reported as TORN
            elif o[4] != digest:
                lost.append(f"LOST {rel}: {kind} file has other content than its last closed version")
            elif o[0] != kind:
                lost.append(f"LOST {rel}: was {kind} before the kill, state {o[0]} after remount")
        self.res.check(f"cycle {c}: (a) every file has a valid checksum", torn + read_errors, None)
        self.res.check(f"cycle {c}: (b) tracked pinned/persistent files present and intact", lost, "lost")
        self.res.check(f"cycle {c}: no stale version, deleted files stay deleted, flags kept", other, None)
        for rel in delete:
            try:
                with wd.op(f"unlink partial {rel}"):
                    os.unlink(self.p(rel))
            except OSError as e:
                if e.errno not in GONE:
                    raise
        # (c) usage figures
        self.res.check(f"cycle {c}: (c) usage figures match the files", S.usage_check(self.mnt, wd, f"cycle {c}"),
                       "drift")
        # the model restarts from what is there
        recs = {}
        for rel, (state, size, ok, reason, dg) in observed.items():
            if not ok:
                continue
            r = Rec(rel)
            r.kind = state if state in ("cached", "pinned", "persistent") else None
            r.present = "yes" if r.kind in ("pinned", "persistent") else "maybe"
            r.digest, r.size = dg, size
            recs[rel] = r
        try:
            with wd.op("getxattr keep/p persistent"):
                D = int(os.getxattr(self.p("keep/p"), "user.cache.persistent").decode() or 0)
        except (OSError, ValueError):
            D = None
        with self.lock:
            self.recs = recs
            self.D = D
