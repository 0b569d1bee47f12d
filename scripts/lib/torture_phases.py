"""Concurrency and fault phases of scripts/torture."""

import errno
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
import traceback

import torture_support as S
from torture_support import log, ename

MiB = 1 << 20
GONE = (errno.ENOENT, errno.ESTALE)


def aux_fs(ctx):
    """One tmpfs for the concurrency and fault stores."""
    fs = os.path.join(ctx.workdir, "aux", "fs")
    if not S.is_mounted(fs):
        S.mount_tmpfs(fs, "128m")
    return fs


# ------------------------------------------------------------ concurrency --
class Concurrency:
    """8+ threads on overlapping names (write to a temp name, rename over the
    target) in a pool smaller than the working set, so eviction never stops."""

    NAMES = 40          # x avg 256 KiB = ~10 MiB working set in a 4 MiB pool
    WRITERS = 4
    READERS = 4

    def __init__(self, ctx):
        self.ctx, self.res, self.wd = ctx, ctx.results, ctx.wd
        self.store = os.path.join(aux_fs(ctx), "conc-store")
        self.mnt = os.path.join(ctx.workdir, "aux", "mnt-conc")
        self.log_path = os.path.join(ctx.logdir, "concurrency-daemon.log")
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.problems = {"torn": [], "errors": []}
        self.stats = {}
        self.names = [f"data/c/n{i:02d}.bin" for i in range(self.NAMES)]
        self.daemon = None
        self.hung = False

    def p(self, rel):
        return os.path.join(self.mnt, rel)

    def count(self, k, n=1):
        with self.lock:
            self.stats[k] = self.stats.get(k, 0) + n

    def problem(self, cat, msg):
        with self.lock:
            self.problems[cat].append(msg)

    def error(self, desc, e):
        if self.hung:
            return
        step = getattr(e, "step", None)
        self.problem("errors", f"ERROR {desc}{' (' + step + ')' if step else ''}: {ename(e)} ({e.strerror})")

    def writer(self, tid, rng):
        n = 0
        while not self.stop.is_set():
            name = rng.choice(self.names)
            tmp = f"data/c/.tmp-w{tid}-{n}"
            n += 1
            data = S.make_content(rng)
            try:
                with self.wd.op(f"write {tmp}"):
                    S.write_whole(self.p(tmp), data, rng)
            except OSError as e:
                if e.errno == errno.ENOSPC:
                    self.res.note("ENOSPC during concurrency write (tolerated)")
                else:
                    self.error(f"write {tmp}", e)
                try:
                    os.unlink(self.p(tmp))
                except OSError:
                    pass
                continue
            self.count("writes")
            try:
                with self.wd.op(f"rename {tmp} {name}"):
                    os.rename(self.p(tmp), self.p(name))
                self.count("renames")
            except OSError as e:
                if e.errno in GONE:
                    self.count("temp files evicted before their rename")
                else:
                    self.error(f"rename {tmp} -> {name}", e)

    def reader(self, tid, rng):
        while not self.stop.is_set():
            name = rng.choice(self.names)
            try:
                with self.wd.op(f"read {name}"):
                    data, size = S.read_whole(self.p(name), drop_cache=rng.random() < 0.5)
            except OSError as e:
                if e.errno in GONE:
                    self.count("reads of evicted names")
                else:
                    self.error(f"read {name}", e)
                continue
            ok, reason, _ = S.check_content(data, size)
            self.count("reads verified")
            if not ok and not self.hung:
                try:
                    with self.wd.op(f"diagnose {name}"):
                        second = S.diagnose(self.p(name))
                except OSError as e:
                    second = f"second look failed: {ename(e)}"
                self.problem("torn", f"TORN {name}: {reason} (files only ever appear whole, by rename); {second}")

    def meta(self, tid, rng):
        pinned = []
        last_purge = time.monotonic()
        while not self.stop.is_set():
            x = rng.random()
            what = "metadata operation"
            try:
                if x < 0.3:
                    what = "listdir data/c"
                    with self.wd.op("listdir data/c"):
                        os.listdir(self.p("data/c"))
                elif x < 0.6:
                    name = rng.choice(self.names)
                    what = f"stat {name}"
                    with self.wd.op(f"stat {name}"):
                        os.stat(self.p(name))
                elif x < 0.75:
                    with self.wd.op("figures data"):
                        S.figures(self.p("data"))
                else:
                    if len(pinned) >= 2:
                        name, value = pinned.pop(0), b"0"
                    else:
                        name, value = rng.choice(self.names), b"1"
                    what = f"setxattr user.cache.pinned={value.decode()} {name}"
                    with self.wd.op(f"setxattr pinned={value.decode()} {name}"):
                        os.setxattr(self.p(name), "user.cache.pinned", value)
                    if value == b"1":
                        pinned.append(name)
                    self.count("pin toggles")
                if time.monotonic() - last_purge > 2:
                    last_purge = time.monotonic()
                    what = "setxattr user.cache.purge=1 data"
                    with self.wd.op("setxattr purge=1 data"):
                        os.setxattr(self.p("data"), "user.cache.purge", b"1")
                    self.count("purges")
            except OSError as e:
                if e.errno not in GONE:
                    self.error(what, e)
            time.sleep(0.003)

    def run_thread(self, name, fn, tid, rng):
        try:
            fn(tid, rng)
        except Exception:
            self.problem("errors", f"HARNESS {name}: {traceback.format_exc()}")

    def on_hang(self, msg):
        self.hung = True
        self.stop.set()
        d = self.daemon
        if d:
            log(f"watchdog: killing the daemon; its threads were: {d.thread_states()}")
            d.force_abort()

    def run(self, seconds):
        res = self.res
        d = S.Daemon(self.ctx.binary, self.store, self.mnt,
                     ["--pool", "data=4M", "-o", "min_free=16M,sweep_interval=1"], self.log_path, "concurrency")
        try:
            d.start()
        except S.MountFailed as e:
            res.check("concurrency: mount", [f"MOUNT {e}"], "mount")
            return
        res.check("concurrency: mount", [], "mount")
        self.daemon = d
        self.wd.on_hang = self.on_hang
        try:
            os.makedirs(self.p("data/c"), exist_ok=True)
            with self.wd.op("figures data"):
                start_figs = S.figures(self.p("data"))
            rng = random.Random(self.ctx.seed * 31 + 5)
            threads = []
            for k in range(self.WRITERS):
                threads.append(("writer", self.writer, k))
            for k in range(self.READERS):
                threads.append(("reader", self.reader, k))
            threads.append(("meta", self.meta, 0))
            ts = [threading.Thread(target=self.run_thread, name=f"conc-{n}{k}", daemon=True,
                                   args=(f"{n}{k}", fn, k, random.Random(rng.randrange(1 << 30))))
                  for n, fn, k in threads]
            log(f"concurrency: {len(ts)} threads for {seconds:.0f} s on {self.NAMES} names, pool data=4M")
            for t in ts:
                t.start()
            end = time.monotonic() + seconds
            while time.monotonic() < end and d.alive() and not self.hung and not self.ctx.abort.is_set():
                time.sleep(0.05)
            died = None if d.alive() or self.hung else d.returncode()
            self.stop.set()
            join_end = time.monotonic() + 15
            for t in ts:
                t.join(timeout=max(0.1, join_end - time.monotonic()))
            stuck = [t.name for t in ts if t.is_alive()]
            res.check("concurrency: daemon alive throughout",
                      [f"CRASH daemon exited with {died}; log:\n" + "\n".join(S.tail(self.log_path, 12, d.log_offset))]
                      if died is not None else [], "crashes")
            res.check("concurrency: no operation over 10 s",
                      self.wd.take_hangs() + [f"HANG thread {n} never finished" for n in stuck], "hangs")
            res.check("concurrency: no torn or short read", self.problems["torn"], "torn")
            res.check("concurrency: no EIO or other unexpected errno", self.problems["errors"], None)
            if self.hung or died is not None or stuck:
                d.force_abort()
                return
            with self.wd.op("figures data"):
                figs = S.figures(self.p("data"))
            evicted = figs["evicted_files"] - start_figs["evicted_files"]
            self.stats["evictions"] = evicted
            res.check("concurrency: eviction was active", [] if evicted > 0 else
                      ["HARNESS no file was evicted: the pool never filled, the phase tested nothing"], None)
            # every file still there is whole
            bad = []
            for path in S.walk_files(self.p("data")):
                rel = os.path.relpath(path, self.mnt)
                try:
                    with self.wd.op(f"final read {rel}"):
                        data, size = S.read_whole(path, drop_cache=True)
                except OSError as e:
                    if e.errno not in GONE:
                        bad.append(f"ERROR read {rel}: {ename(e)}")
                    continue
                ok, reason, _ = S.check_content(data, size)
                if not ok and "/.tmp-" not in rel:
                    bad.append(f"TORN {rel}: {reason}")
            res.check("concurrency: every remaining file whole", bad, None)
            res.check("concurrency: usage figures match the files", S.usage_check(self.mnt, self.wd, "concurrency"),
                      "drift")
            rc, msg = d.unmount()
            res.check("concurrency: clean unmount, exit 0",
                      [] if rc == 0 else [f"{'HANG' if rc is None else 'UNMOUNT'} exit {rc} {msg}; log:\n"
                                          + "\n".join(S.tail(self.log_path, 10, d.log_offset))], None)
            if rc is None:
                d.force_abort()
            ok, n, out = S.verify_store(self.ctx.binary, self.store)
            res.check("concurrency: cachefs verify clean", [] if ok else [f"VERIFY {out}"], "verify")
        except OSError as e:
            res.check("concurrency: harness", [f"ERROR {ename(e)}: {e}"], None)
            d.force_abort()
        finally:
            self.wd.on_hang = None
            self.stop.set()
            if d.alive():
                d.force_abort()


# ------------------------------------------------------------------ faults --
SLOW_READER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
os.read(fd, 65536)
print("ready", flush=True)
while os.read(fd, 4096):
    time.sleep(0.05)
"""


class Faults:
    def __init__(self, ctx):
        self.ctx, self.res, self.wd = ctx, ctx.results, ctx.wd
        self.fs = aux_fs(ctx)
        self.rng = random.Random(ctx.seed * 17 + 3)
        self.outcomes = []      # (fault, outcome, ok)

    def record(self, fault, problems, outcome):
        ok = self.res.check(f"fault: {fault}", problems, None)
        self.outcomes.append((fault, outcome if ok else outcome + " -> FAILED: " + "; ".join(
            str(p).splitlines()[0] for p in problems[:3]), ok))

    def poll_figures(self, pool, want, deadline=5.0):
        """Polls pool figures until want(figs) or the deadline; returns (ok, figs, seconds)."""
        t0 = time.monotonic()
        while True:
            with self.wd.op(f"figures {pool}"):
                figs = S.figures(pool)
            if want(figs):
                return True, figs, time.monotonic() - t0
            if time.monotonic() - t0 > deadline:
                return False, figs, time.monotonic() - t0
            time.sleep(0.05)

    def verify_into(self, problems, d):
        """After a fault, `cachefs verify` of the daemon's store must say clean."""
        ok, _, out = S.verify_store(self.ctx.binary, d.store)
        if not ok:
            problems.append(f"VERIFY {out}")

    def daemon(self, name, args):
        return S.Daemon(self.ctx.binary, os.path.join(self.fs, f"{name}-store"),
                        os.path.join(self.ctx.workdir, "aux", f"mnt-{name}"), args,
                        os.path.join(self.ctx.logdir, f"{name}-daemon.log"), name)

    def run(self):
        self.wd.on_hang = lambda msg: None
        for fn in (self.reader_killed, self.sigterm, self.index_removed):
            if self.ctx.abort.is_set():
                break
            try:
                fn()
            except (OSError, S.MountFailed) as e:
                self.record(fn.__name__, [f"ERROR {type(e).__name__}: {e}"], "harness error")
        self.wd.on_hang = None

    # (a) reader killed mid-read; pending_usage and leaks around a clear
    def reader_killed(self):
        d = self.daemon("fault-reader", ["--pool", "data=64M", "-o", "sweep_interval=1"])
        d.start()
        self.wd.on_hang = lambda msg: d.force_abort()
        mnt = d.mnt
        pool = os.path.join(mnt, "data")
        problems, notes = [], []
        try:
            # a1: `cat big > pipe nobody reads` blocks mid-read; SIGKILL it, then clear
            big1 = os.path.join(pool, "big1.bin")
            data = S.make_content(self.rng, 8 * MiB)
            with self.wd.op("write big1"):
                S.write_whole(big1, data, self.rng)
            cat = subprocess.Popen(["cat", big1], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            if cat.poll() is not None:
                problems.append(f"FAULT cat finished before it could be killed (rc {cat.returncode})")
            cat.kill()
            cat.wait()
            cat.stdout.close()
            with self.wd.op("clear data"):
                os.setxattr(pool, "user.cache.clear", b"1")
            ok, figs, secs = self.poll_figures(pool, lambda f: f["pending_usage"] == 0 and f["usage"] == 0
                                               and f["files"] == 0)
            if not ok:
                problems.append(f"LEAK after cat was killed mid-read and the pool cleared: {figs}")
            # The kernel learns of cachefs's removals from the notification thread, a moment
            # after the clear returns (docs/design-choices.md, "The kernel's caches").
            gone_by = time.monotonic() + 2.0
            while os.path.exists(big1) and time.monotonic() < gone_by:
                time.sleep(0.01)
            if os.path.exists(big1):
                problems.append("FAULT big1.bin still listed 2 s after clear")
            notes.append(f"cat killed mid-read, clear: pending 0 after {secs:.2f} s")
            # a2: slow reader holds the file; clear detaches it (pending); SIGKILL; pending back to 0
            big2 = os.path.join(pool, "big2.bin")
            data = S.make_content(self.rng, 6 * MiB)
            with self.wd.op("write big2"):
                S.write_whole(big2, data, self.rng)
            rd = subprocess.Popen([sys.executable, "-c", SLOW_READER, big2], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
            r, _, _ = select.select([rd.stdout], [], [], 10)
            line = rd.stdout.readline().strip() if r else b""
            if line != b"ready":
                problems.append("FAULT slow reader never started reading")
            with self.wd.op("clear data"):
                os.setxattr(pool, "user.cache.clear", b"1")
            with self.wd.op("figures data"):
                figs = S.figures(pool)
            if figs["pending_usage"] != len(data):
                problems.append(f"LEAK pending_usage={figs['pending_usage']} while a cleared {len(data)}-byte "
                                f"file is still open (expected exactly its size)")
            rd.kill()
            rd.wait()
            rd.stdout.close()
            ok, figs, secs = self.poll_figures(pool, lambda f: f["pending_usage"] == 0 and f["usage"] == 0)
            if not ok:
                problems.append(f"LEAK pending_usage stays {figs['pending_usage']} after the reader was killed")
            notes.append(f"slow reader killed after clear: pending {len(data)} -> 0 in {secs:.2f} s")
            # the daemon still answers, and no bytes are left without an owner
            with self.wd.op("ls"):
                os.listdir(pool)
            objects = os.path.join(d.store, "objects")
            # Bytes of a removed file go once its removal is committed (one group commit,
            # a few milliseconds after the last close): poll briefly before calling it a leak.
            deadline = time.monotonic() + 2
            while True:
                on_disk = S.bytes_under(objects)
                with self.wd.op("root figures"):
                    root = S.figures(mnt)
                counted = root["usage"] + root["persistent_usage"] + root["pending_usage"]
                if on_disk == counted or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            if on_disk != counted:
                problems.append(f"LEAK {on_disk} bytes in STORE/objects but the root counts {counted}")
            if not d.alive():
                problems.append(f"CRASH daemon exited with {d.returncode()}")
            rc, msg = d.unmount()
            if rc != 0:
                problems.append(f"UNMOUNT exit {rc} {msg}")
                d.force_abort()
            self.verify_into(problems, d)
        finally:
            if d.alive():
                d.force_abort()
        self.record("reader killed mid-read + clear (pending_usage, leaks)", problems,
                    "; ".join(notes) + "; objects == counted bytes; verify clean")

    # (c) SIGTERM is a clean unmount
    def sigterm(self):
        d = self.daemon("fault-reader", ["-o", "sweep_interval=1"])
        d.start()
        self.wd.on_hang = lambda msg: d.force_abort()
        problems = []
        try:
            with self.wd.op("write"):
                S.write_whole(os.path.join(d.mnt, "data", "after-sigterm.bin"), S.make_content(self.rng), self.rng)
            os.kill(d.pid, signal.SIGTERM)
            try:
                rc = d.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                rc = None
            t0 = time.monotonic()
            while S.is_mounted(d.mnt) and time.monotonic() - t0 < 3:
                time.sleep(0.05)
            if rc != 0:
                problems.append(f"{'HANG' if rc is None else 'UNMOUNT'} SIGTERM: daemon exit {rc}")
            if S.is_mounted(d.mnt):
                problems.append("UNMOUNT SIGTERM: the mount is still in /proc/mounts 3 s after the daemon exited")
            d.force_abort()
            self.verify_into(problems, d)
        finally:
            if d.alive():
                d.force_abort()
        self.record("SIGTERM to the daemon", problems, f"exit {rc}, mount gone, verify clean")

    # (b) index made read-only, then removed, while mounted
    def index_removed(self):
        d = self.daemon("fault-index", ["-o", "sweep_interval=1"])
        d.start()
        hung = []
        self.wd.on_hang = lambda msg: (hung.append(msg), d.force_abort())
        mnt, pool = d.mnt, os.path.join(d.mnt, "data")
        index = os.path.join(d.store, "index.sqlite")
        problems, steps = [], []
        files = []
        try:
            for i in range(6):
                f = os.path.join(pool, f"f{i}.bin")
                S.write_whole(f, S.make_content(self.rng), self.rng)
                files.append(f)

            def attempt(label):
                """Runs reads, lists and writes; returns {op: 'ok' | errno}."""
                out = {}

                def do(name, fn):
                    try:
                        with self.wd.op(f"{label}: {name}"):
                            fn()
                        out[name] = "ok"
                    except OSError as e:
                        out[name] = ename(e)

                def read():
                    data, size = S.read_whole(files[0], drop_cache=True)
                    ok, reason, _ = S.check_content(data, size)
                    if not ok:
                        problems.append(f"TORN {label}: read of an intact file: {reason}")
                tag = label.split()[0]
                do("read", read)
                do("ls", lambda: os.listdir(pool))
                do("stat", lambda: os.stat(files[1]))
                do("create+write", lambda: S.write_whole(os.path.join(pool, f"new-{tag}.bin"),
                                                         S.make_content(self.rng), self.rng))
                do("pin", lambda: os.setxattr(files[2], "user.cache.pinned", b"1"))
                do("unlink", lambda: os.unlink(files.pop(3)))
                do("figures", lambda: S.figures(pool))
                return out

            log_mark = os.path.getsize(d.log_path)
            os.chmod(index, 0o400)
            ro = attempt("read-only index")
            steps.append("chmod 0400: " + " ".join(f"{k}={v}" for k, v in ro.items()))
            os.unlink(index)
            gone = attempt("removed index")
            time.sleep(2.5)      # access times reach the index every 2 s
            gone2 = attempt("removed index, later")
            steps.append("removed: " + " ".join(f"{k}={v}" for k, v in gone.items()))
            alive = d.alive()
            rc_during = d.returncode()
            for label, out in (("read-only", ro), ("removed", gone), ("removed, 2.5 s later", gone2)):
                for op, v in out.items():
                    if v in ("ENOTCONN", "ECONNABORTED"):
                        problems.append(f"CRASH {label}: {op} answered {v}: the daemon is gone")
                    elif v == "EIO" and op in ("read", "ls", "stat"):
                        # a read may fail, but cleanly: only note it
                        steps.append(f"{label}: {op} EIO")
            if hung:
                problems.extend(f"HANG {h}" for h in hung)
            if not alive and rc_during is not None and rc_during < 0:
                problems.append(f"CRASH the daemon died of signal {-rc_during}; log:\n"
                                + "\n".join(S.tail(d.log_path, 12, d.log_offset)))
            failed_writes = [f"{op}={v}" for out in (gone, gone2) for op, v in out.items()
                             if v != "ok" and op in ("create+write", "pin", "unlink")]
            with open(d.log_path, "rb") as f:
                f.seek(log_mark)
                lines = f.read().decode(errors="replace").splitlines()
            errors = [l for l in lines if any(w in l.lower() for w in (" error", " critical", "fatal"))]
            if failed_writes and not errors:
                problems.append(f"FAULT writes failed ({', '.join(failed_writes)}) but the daemon log has no "
                                f"error line for them")
            if not failed_writes:
                steps.append("no write failed after the index was removed (the daemon writes its open copy "
                             "back under the index's name)")
            if errors:
                steps.append(f"log: {errors[0].strip()[:160]}")
            # unmount: the daemon must exit on its own, without a signal
            if d.alive():
                rc, msg = d.unmount(timeout=30)
                if rc is None:
                    problems.append(f"HANG unmount with the index removed: {msg}")
                elif rc < 0:
                    problems.append(f"CRASH unmount with the index removed: died of signal {-rc}; log:\n"
                                    + "\n".join(S.tail(d.log_path, 12, d.log_offset)))
                steps.append(f"unmount: exit {rc}")
                if not os.path.exists(index):
                    problems.append("LOST the index was not written back after it was removed while mounted")
            else:
                steps.append(f"daemon exited by itself with {rc_during}")
        finally:
            if d.alive() or S.is_mounted(d.mnt):
                d.force_abort()
        self.record("index chmod 0400 then removed while mounted", problems, "; ".join(steps))
