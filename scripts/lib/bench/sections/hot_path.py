"""--hot-path: the per-file hot path (a hit, a create, an unlink) beside libfuse's reference
daemon passthrough_hp (issue 30), and the store's disk itself.

Six sides, each a directory of its own on the same disk: passthrough_hp mounted over
WORK/reference-source (its binary from --reference or PASSTHROUGH_HP; built from libfuse by
whoever runs the bench, never by the bench) with its defaults, as users run it, and the same
binary with --nosplice over WORK/lean-source (its cheapest form per request; compared with
cachefs's hits only); cachefs with a plaintext store (its defaults: kernel_hits, the kernel
serving opens and closes by itself), cachefs with an encrypted store (cachefs keygen,
--encrypt), cachefs with kernel_hits=off (every open a request, as before issue 45), and
WORK/direct. Every side stays mounted for the whole section, and each run has a directory of
its own on every side. A seventh side, for hits only: floorfs (bench/floorfs.c), a FUSE
filesystem that does nothing a cache must do, the floor under every FUSE side (see
bench/floor.py). First every run's creates of N files of 1 KiB, side after side (each
pair of sides swaps places every other run), each run followed by a settle and a drop of the
kernel's dentries (see run_creates); then, run after run in the same orders, the hits on each
side (two untimed reads of every file, the warm-up, then the timed read) and the unlinks on
each side.

A hit is a warm one, the steady state of a file read again and again: the timed read is the
third since the kernel's dentries were dropped, so the file's name and bytes are in the
kernel's caches of that mount (cachefs and passthrough_hp both open with keep_cache) and the
kernel has nothing left to ask. The read() is then the kernel's alone on every side; what
reaches a daemon is the open and the close (OPEN, FLUSH unless the daemon asked for noflush,
RELEASE). Two warm-up passes because the first read of a file is a LOOKUP and a READ, and
after a READ the kernel marks the file's atime stale and sends a GETATTR at its next read
(seen on 6.18 through cachefs).

Daemon CPU per operation: its utime + stime (or its threads' run time, see
measure.cpu_per_op) from just before the helper's loop (the daemon idle: measure.wait_pid_idle,
a fifth of a second at least, on every side with a daemon) until the daemon is idle after it
(so RELEASEs and FORGETs the loop left queued count), divided by N. cachefs's unlinks are
timed until the calls return, and their CPU runs until the store holds none of the files'
bytes (the helper's -o). What a create leaves for later (cachefs's background sync of
closed files; passthrough_hp's writeback cache writes a file's dirty pages back at its
close, within the loop) is a row of its own, "deferred": see run_creates. So is what a hit
leaves for later: cachefs appends the hits' access times to its index's access log within the
hit's window, and writes them into the files' rows at the next fold (a pass that picks victims,
unmount, or 32,768 files read since the last fold), none of which comes in the window; the row
"fold" forces one right after it (see fold_window).
"""
import os
import time

from .. import measure
from ..core import FAIL, BenchError, drop_caches, log, warn
from ..floor import FloorMount
from ..mounts import Mount, ReferenceMount

NOT_GIVEN = "not given"
# side: what it is called in the rows and the log
SIDES = (("reference", "passthrough_hp"), ("lean", "passthrough_hp --nosplice"), ("cachefs", "cachefs"),
         ("encrypted", "encrypted"), ("opens", "cachefs kernel_hits=off"), ("disk", "disk (ext4)"))
# The sides each compared with the disk, and the section prefix of each cachefs side. The lean
# reference (passthrough_hp --nosplice, the same daemon at its cheapest per request) is
# compared with cachefs's hits only.
FUSE_SIDES = (SIDES[0], *SIDES[2:5])
PREFIXES = {"cachefs": "hot", "encrypted": "hot_enc", "opens": "hot_off"}
OPS = ("hit", "create", "unlink")
# Targets against the reference: issue 45's for hits (10x its rate, a tenth of its CPU), on
# plaintext and encrypted stores; issue 30's for the plaintext store's creates and unlinks.
RATE_TARGETS = {"hit": "10", "create": "1.0"}
# cachefs appends the access times its hits gathered to the index's access log when 2 s have
# passed since the last append (Tunables.accessFlushSeconds), at its evictor's next round (one
# a second): within 3 s. A cachefs side waits this long before its warm-up passes (the last
# side's reads are appended by then) and after its timed read, so the window holds one append
# of its files: one row per file read since the last append, however many passes read it, and
# never none. (An append that falls inside the timed read itself, about one pass in twenty,
# also takes the warm-up's times of the files the pass has not read yet, which the append
# after it takes again: at most 10,000 rows more, 16 bytes each.) The wait comes before the
# warm-up, not right before the timed read: on
# this machine a pass after 3.5 s of idle ran at 0.070 to 0.118 s for 10,000 cachefs hits
# against 0.068 to 0.075 s back to back (floorfs: 0.051 to 0.082 against 0.050 to 0.052), and
# no other side's timed read waits. (The fold of those times into the files' rows comes at the
# next pass that picks victims, at unmount, or past 32,768 files read: none here, where
# nothing is evicted and 10,000 files are read.)
ACCESS_FLUSH_WAIT = 3.5
CPU_TARGETS = {"hit": ("time", "10"), "create": ("time", "1.0"), "unlink": ("time", "1.0")}


def reference_binary(b):
    """The passthrough_hp binary to measure against, or None (its column says "not given")."""
    path = b.opts.reference or os.environ.get("PASSTHROUGH_HP", "")
    if not path:
        return None
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise BenchError(f"passthrough_hp binary not found or not executable: {path}")
    return os.path.abspath(path)


def op_label(op, n):
    return {"hit": f"open+read 1K+close x {n}, warm",
            "create": f"create 1K x {n}",
            "unlink": f"unlink x {n}"}[op]


def define(b):
    n, r = b.opts.nfiles, b.results
    d = r.define
    for prefix, col1, title in (("hot", "cachefs", "hot path: cachefs"),
                                ("hot_enc", "encrypted", "hot path: encrypted store"),
                                ("hot_off", "kernel_hits=off", "hot path: cachefs with kernel_hits=off (every open a request)")):
        r.define_section(title, col1, "passthrough_hp")
        for op in OPS:
            # issue 45's hit targets hold for both stores; issue 30's for the plaintext one
            targets = prefix == "hot" or (prefix == "hot_enc" and op == "hit")
            d(f"{prefix}_{op}", op_label(op, n), "files/s", "rate", RATE_TARGETS.get(op) if targets else None)
            kind, target = CPU_TARGETS[op]
            if not targets:
                kind, target = ("abs" if kind == "max" else kind), None
            d(f"{prefix}_cpu_{op}", f"  daemon CPU per {op}", "µs", kind, target)
            if op == "create":
                d(f"{prefix}_cpu_deferred", "  deferred CPU per create", "µs", "abs")
            if op == "hit":
                d(f"{prefix}_cpu_fold", "  deferred CPU per hit (its access time's fold)", "µs", "abs")
            if b.fuse_trace:
                d(f"{prefix}_req_{op}", f"  FUSE requests per {op}", "requests", "abs")
    r.define_section("hot path: cachefs against passthrough_hp --nosplice", "cachefs", "--nosplice")
    d("hot_hit_lean", op_label("hit", n), "files/s", "rate")
    d("hot_cpu_hit_lean", "  daemon CPU per hit", "µs", "time")
    r.define_section("hot path: the floor (floorfs, a FUSE fs that answers no request)", "floorfs", "passthrough_hp")
    d("hot_hit_floor", op_label("hit", n), "files/s", "rate")
    r.define_section("hot path: cachefs against the floor", "cachefs", "floorfs")
    d("hot_hit_vs_floor", op_label("hit", n), "files/s", "rate")
    r.define_section("hot path against the disk", "FUSE", "disk (ext4)")
    for op in OPS:
        for side, name in FUSE_SIDES:
            d(f"hot_{op}_disk_{side}", f"{op}: {name}", "files/s", "rate", columns=(name, "disk (ext4)"))


def routes(kind, op, side):
    """The (key, column) pairs a figure of SIDE is recorded into. kind: rate, cpu (op
    "deferred": the create's deferred CPU; "fold": a hit's) or req (FUSE requests per op)."""
    return floor_routes(kind, op, side) + side_routes(kind, op, side)


def floor_routes(kind, op, side):
    """The floor's rows take the hit rates of floorfs, the reference and cachefs."""
    if (kind, op) != ("rate", "hit"):
        return []
    return {"floor": [("hot_hit_floor", "mount"), ("hot_hit_vs_floor", "direct")],
            "reference": [("hot_hit_floor", "direct")],
            "cachefs": [("hot_hit_vs_floor", "mount")]}.get(side, [])


def side_routes(kind, op, side):
    if side == "floor":
        return []
    lean = {"rate": "hot_hit_lean", "cpu": "hot_cpu_hit_lean"}.get(kind) if op == "hit" else None
    if side == "lean":
        return [(lean, "direct")] if lean else []
    if side == "cachefs" and lean:
        return [(lean, "mount"), *routes_of_side(kind, op, side)]
    return routes_of_side(kind, op, side)


def routes_of_side(kind, op, side):
    if kind in ("cpu", "req"):
        if side == "reference":
            return [(f"{prefix}_{kind}_{op}", "direct") for prefix in PREFIXES.values()]
        return [(f"{PREFIXES[side]}_{kind}_{op}", "mount")] if side in PREFIXES else []
    if side == "reference":
        pairs = [(f"{prefix}_{op}", "direct") for prefix in PREFIXES.values()]
    elif side == "disk":
        pairs = [(f"hot_{op}_disk_{s}", "direct") for s, _ in FUSE_SIDES]
    else:
        pairs = [(f"{PREFIXES[side]}_{op}", "mount")]
    if side != "disk":
        pairs.append((f"hot_{op}_disk_{side}", "mount"))
    return pairs


def record(b, kind, op, side, value):
    for key, column in routes(kind, op, side):
        b.results.record(key, column, value)


def run_hot_path(b):
    o = b.opts
    binary = reference_binary(b)
    if not b.can_drop_caches:
        raise BenchError("--hot-path drops the kernel's dentries between runs (see run_creates): run it as root")
    log(f"    reference: {binary or 'not given (--reference PATH or PASSTHROUGH_HP)'}")
    key = f"{b.work}/store.key"
    if not os.path.exists(key) and b.steps.run(None, [b.cachefs, "keygen", key]) != 0:
        raise BenchError("cachefs keygen failed")
    mounts = {
        "cachefs": Mount(b, *b.main_paths),
        "encrypted": Mount(b, f"{b.work}/encrypted-store", f"{b.work}/encrypted-mnt"),
        "opens": Mount(b, f"{b.work}/opens-store", f"{b.work}/opens-mnt"),
        "floor": FloorMount(b, f"{b.work}/floor-mnt", 1024, o.nfiles),
    }
    if binary:
        mounts["reference"] = ReferenceMount(b, binary, f"{b.work}/reference-source", f"{b.work}/reference-mnt")
        mounts["lean"] = ReferenceMount(b, binary, f"{b.work}/lean-source", f"{b.work}/lean-mnt", ["--nosplice"])
        b.reference = mounts["reference"]
    try:
        mounts["cachefs"].mount(["--pool", "data=0"])
        mounts["encrypted"].mount(["--pool", "data=0", "--encrypt", "--key-file", key])
        mounts["opens"].mount(["--pool", "data=0", "-o", "kernel_hits=off"])
        mounts["floor"].mount()
        if binary:
            mounts["reference"].mount()
            mounts["lean"].mount()
        sides = [s for s, _ in SIDES if s in mounts or s == "disk"]   # the floor's hits are added in run_hits_and_unlinks
        rounds = []     # per run: the order of the sides and their directories
        for rep in range(1, o.repeat + 1):
            order = sides if rep % 2 else swap_pairs(sides)
            rounds.append((rep, order, {side: side_dir(b, mounts, side, rep) for side in order}))
        run_creates(b, mounts, rounds)
        run_hits_and_unlinks(b, mounts, rounds)
        if not binary:
            for _ in rounds:
                for op in OPS:
                    record(b, "rate", op, "reference", NOT_GIVEN)
                    record(b, "rate", op, "lean", NOT_GIVEN)
                record(b, "cpu", "hit", "lean", NOT_GIVEN)
                for op in (*OPS, "deferred", "fold"):
                    record(b, "cpu", op, "reference", NOT_GIVEN)
                if b.fuse_trace:
                    for op in OPS:
                        record(b, "req", op, "reference", NOT_GIVEN)
    finally:
        b.use_main_store()
        for side in ("floor", "reference", "lean", "opens", "encrypted", "cachefs"):
            if side in mounts:
                mounts[side].unmount()
        b.reference = None
        b.remove(mounts["encrypted"].store, mounts["opens"].store, f"{b.work}/reference-source",
                 f"{b.work}/lean-source")


def swap_pairs(sides):
    """reference, cachefs, encrypted, disk -> cachefs, reference, disk, encrypted: every
    other run the reference and cachefs swap places (each first in turn), as do the other two."""
    swapped = list(sides)
    for i in range(0, len(swapped) - 1, 2):
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
    return swapped


def side_dir(b, mounts, side, rep):
    if side == "disk":
        return f"{b.direct}/hot{rep}"
    if side in ("reference", "lean"):
        return f"{mounts[side].mnt}/hot{rep}"
    return f"{mounts[side].mnt}/data/hot{rep}"


def timed(b, mounts, side, op, args, n, wait_args=()):
    """One helper run on SIDE, recorded: files/s, and on a mount the daemon's CPU per op
    from before it until the daemon is idle after it, and the FUSE requests per op.
    Returns the daemon's CPU samples (before, after), or (None, None) on the disk."""
    mount = mounts.get(side)
    if mount is not None:
        mount.check_alive()
        b.mount = mount            # the helper's FUSE request count reads the mount in use
    pid = mount.daemon_pid if mount is not None else None
    flushes = op == "hit" and side in PREFIXES
    # What the daemon still does for earlier work (a warm-up's RELEASEs and FORGETs, its close
    # events) stays out of the window.
    measure.wait_pid_idle(pid)
    before = measure.daemon_cpu_sample(pid) if pid else None
    result = measure.files(b, *wait_args, *args)
    after = cpu = None
    if flushes:
        time.sleep(ACCESS_FLUSH_WAIT)
    if pid:
        measure.wait_pid_idle(pid)
        after = measure.daemon_cpu_sample(pid)
        cpu = measure.cpu_per_op(before, after, n)
    line = f"    {side:<10} {op:<6} {result.value} files/s"
    if result.value2 not in (None, FAIL):
        line += f" ({result.value2} files/s until the store held none of their bytes)"
    if cpu is not None:
        line += f", daemon CPU {cpu} µs per {op}"
    if result.reqs:
        line += f", FUSE requests per {op} {result.reqs[0] / n:.2f}"
    log(line)
    record(b, "rate", op, side, result.value)
    if mount is not None:
        record(b, "cpu", op, side, cpu if cpu is not None else FAIL)
        if b.fuse_trace:
            record(b, "req", op, side, round(result.reqs[0] / n, 2) if result.reqs else FAIL)
    return before, after


def run_creates(b, mounts, rounds):
    """Every run's creates before any unlink: on an ext4 without a journal (this machine's
    disk) allocating an inode skips, reading its inode table block, every inode freed in
    the last minute (five while that block is dirty), so creates soon after another run's
    unlinks cost passthrough_hp and the disk several times more (measured: the reference's
    CPU per create went from 280 to 600 µs, the disk's creates from 42,000 to 2,200/s),
    and cachefs nothing (its removed files' bytes become spares, see SpareByteFiles).

    After each run's creates, the settle (cachefs's background sync of the closed files,
    `sync`, every daemon idle): a side's "deferred" CPU runs from the end of its create
    window to the end of the settle, per file (the other sides' creates and the settle's
    idle time included). Then the kernel's dentries and inodes are dropped (echo 2 >
    drop_caches, every daemon idle again, untimed): passthrough_hp holds a descriptor for
    every inode the kernel knows, and five runs' files would pass this machine's hard limit
    of 20,000 descriptors, which the bench cannot raise (no CAP_SYS_RESOURCE)."""
    n = b.opts.nfiles
    for rep, order, dirs in rounds:
        log(f"==> hot path: creates, run {rep}/{len(rounds)} ({', '.join(order)})")
        for directory in dirs.values():
            os.makedirs(directory)
        os.sync()
        for side in order:
            measure.wait_pid_idle(mounts[side].daemon_pid if side in mounts else None)
        ends = {}
        for side in order:
            _, after = timed(b, mounts, side, "create", ["create", dirs[side], n, 1024], n)
            if after is not None:
                ends[side] = after
        time.sleep(b.opts.sync_wait)   # cachefs's background sync of the closed files
        os.sync()                      # and dirty pages anywhere
        for side, after in ends.items():
            measure.wait_pid_idle(mounts[side].daemon_pid)
            deferred = measure.cpu_per_op(after, measure.daemon_cpu_sample(mounts[side].daemon_pid), n)
            record(b, "cpu", "deferred", side, deferred)
            log(f"    {side:<10} deferred CPU per create {deferred} µs (until the settle's end)")
        drop_caches(2)
        for side in ends:
            measure.wait_pid_idle(mounts[side].daemon_pid)


def run_hits_and_unlinks(b, mounts, rounds):
    """Per run: on each side two untimed reads of every file, then the timed one (see the
    module's docstring); then on each side the unlinks (cachefs's: CPU until the store
    holds none of the files' bytes, -o). No create follows them."""
    n = b.opts.nfiles
    for rep, order, dirs in rounds:
        log(f"==> hot path: hits and unlinks, run {rep}/{len(rounds)} ({', '.join(order)})")
        # The floor's files are its own (no create, no unlink): its hits first in odd runs, last in even.
        hit_dirs = {"floor": mounts["floor"].mnt, **dirs} if rep % 2 else {**dirs, "floor": mounts["floor"].mnt}
        for side, directory in hit_dirs.items():
            if side in PREFIXES:
                time.sleep(ACCESS_FLUSH_WAIT)   # see ACCESS_FLUSH_WAIT
            for _ in range(2):
                if b.steps.run(None, [b.files_bin, "read", directory, n, 1024]) != 0:
                    raise BenchError(f"reading the files of {directory} failed")
            timed(b, mounts, side, "hit", ["read", directory, n, 1024], n)
            if side in PREFIXES:
                fold_window(b, mounts[side], side, n)
            elif side == "reference":
                record(b, "cpu", "fold", side, 0.0)   # passthrough_hp keeps no access times
        for side in order:
            wait = []
            if side in PREFIXES:
                wait = ["-o", f"{mounts[side].store}/objects"]
            timed(b, mounts, side, "unlink", ["unlink", dirs[side], n, 0], n, wait)
        for directory in dirs.values():
            try:
                os.rmdir(directory)
            except OSError as error:
                warn(f"removing {directory}: {error}")


def fold_window(b, mount, side, n):
    """The fold of the timed hits' access times into the files' rows, right after the hit's
    window (whose end waited for their append to the access log): forced with
    `setfattr -n user.cache.purge -v 1 data`, which folds before it looks for expired files
    and finds nothing to remove (max_size 0, no max_age). Its daemon CPU from before the
    setfattr until the daemon is idle, per file read: the N files of the timed loop, the only
    ones read since the last fold (the warm-up passes read the same files)."""
    pid = mount.daemon_pid
    measure.wait_pid_idle(pid)
    before = measure.daemon_cpu_sample(pid)
    if b.steps.run(None, ["setfattr", "-n", "user.cache.purge", "-v", "1", f"{mount.mnt}/data"]) != 0:
        raise BenchError(f"setfattr user.cache.purge on {mount.mnt}/data failed")
    measure.wait_pid_idle(pid)
    cpu = measure.cpu_per_op(before, measure.daemon_cpu_sample(pid), n)
    record(b, "cpu", "fold", side, cpu)
    log(f"    {side:<10} fold   daemon CPU {cpu} µs per hit (its access time written into its row)")
