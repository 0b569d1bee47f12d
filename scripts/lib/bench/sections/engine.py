"""Engine workloads 6-7: eviction against find -delete, the preview of that eviction,
and hot reads while the evictor works against the same reads idle."""
import json
import os
import shutil
import time

from .. import measure
from ..core import FAIL, count_tag, elapsed, log, now, warn
from ..results import is_number, median


def define(b):
    o, d = b.opts, b.results.define
    b.results.define_section("engine", "cachefs", "baseline")
    d("evict", f"evict {count_tag(o.nevict)} x 1K vs rm", "files/s", "rate", "1.0")
    d("preview", f"preview of it, {count_tag(o.nevict)} files", "s", "max", "0.5")
    d("preview_writes", "index written by the preview", "text", "text", "none")
    d("unit_pass", "unit of 1,000 x 4K: evicted in", "text", "text", "one pass")
    d("unit_freed", "unit of 1,000 x 4K: space freed after its pass", "s", "max", "1.0")
    d("hot", f"hot read {o.hot_mib} MiB, evicting vs idle", "MiB/s", "rate", "0.9")


def run_engine(b):
    """One mount of a fresh engine store per run, then the hot read's own store."""
    b.use_store(f"{b.work}/engine-store", f"{b.work}/engine-mnt")
    b.mount.mount(["--pool", "data=0", "--pool", "hot=0"])
    b.mount.check_alive()
    run_eviction(b)
    b.mount.check_alive()
    run_unit_eviction(b)
    b.mount.check_alive()
    b.mount.unmount()
    b.remove(b.mount.store)
    b.use_main_store()
    run_hot_read(b)


def run_eviction(b):
    """Eviction cost, in the engine store mounted with --pool data=0 --pool hot=0:
    NEVICT files of 1 KiB in data, then max_size 1 MiB, timed until usage is under
    90% of 1 MiB (getfattr every 50 ms). Baseline: find -delete of as many 1 KiB
    files made directly on the store's filesystem."""
    o, mnt = b.opts, b.mount.mnt
    directory, base, limit = f"{mnt}/data/evict", f"{b.direct}/evict", 1 << 20
    rate = rm_rate = FAIL
    os.mkdir(directory)
    result = measure.files(b, "create", directory, o.nevict, 1024)
    log(f"    created {o.nevict} files of 1 KiB in data at {fmt_rate(result.value)} (untimed setup)")
    os.sync()
    before = measure.cache_attr_int(f"{mnt}/data", "files")
    ev0 = measure.cache_attr_int(f"{mnt}/data", "evicted_files")
    run_preview(b, f"{mnt}/data", before)
    if before is not None and ev0 is not None:
        t0 = now()
        if measure.set_cache_attr(f"{mnt}/data", "max_size", "1M"):
            deadline = now() + o.step_timeout
            while True:
                usage = measure.cache_attr_int(f"{mnt}/data", "usage")
                if usage is None or usage * 10 < limit * 9:
                    break
                if now() >= deadline:
                    warn(f"data still holds {usage} bytes after {o.step_timeout} s")
                    usage = None
                    break
                time.sleep(0.05)
            t1 = now()
            after = measure.cache_attr_int(f"{mnt}/data", "files")
            ev1 = measure.cache_attr_int(f"{mnt}/data", "evicted_files")
            if usage is not None and after is not None and ev1 is not None:
                secs = elapsed(t0, t1)
                rate = round((before - after) / secs, 1)
                log(f"    evicted {before - after} files in {secs:.4f} s (evicted_files +{ev1 - ev0}), usage now {usage}")
    if rate == FAIL:
        warn("eviction measurement failed")
    b.results.record("evict", "mount", rate)

    os.mkdir(base)
    if b.steps.run(None, [b.files_bin, "create", base, o.nevict, 1024]) == 0:
        os.sync()
        t0 = now()
        if b.steps.run(None, ["find", base, "-type", "f", "-delete"]) == 0:
            rm_rate = round(o.nevict / elapsed(t0, now()), 1)
    if rm_rate == FAIL:
        warn("rm baseline failed")
    shutil.rmtree(base, ignore_errors=True)
    b.results.record("evict", "direct", rm_rate)
    b.results.progress("evict")


def run_unit_eviction(b):
    """A unit (user.cache.unit) of 1,000 files of 4 KiB in the empty pool hot, then
    max_size 1M there: the pass must evict it whole, in one removal (one `evicted` event
    naming it with 1,000 files), and the store's filesystem must get its space back. The
    time runs from the moment the unit's names are gone (the pass) until statvfs shows
    at least 90 % of its 4,000 KiB free again."""
    mnt, count, size = b.mount.mnt, 1000, 4096
    directory = f"{mnt}/hot/unit"
    passes, freed = FAIL, FAIL
    try:
        os.mkdir(directory)
        measure.files(b, "create", directory, count, size)
        os.sync()
        if not measure.set_cache_attr(directory, "unit", "1"):
            raise OSError("setfattr user.cache.unit failed")
        def available():
            stats = os.statvfs(b.mount.store)
            return stats.f_bavail * stats.f_frsize
        free_before = available()
        if not measure.set_cache_attr(f"{mnt}/hot", "max_size", "1M"):
            raise OSError("setfattr user.cache.max_size failed")
        deadline = now() + b.opts.step_timeout
        while len(os.listdir(directory)) > 0 and now() < deadline:
            time.sleep(0.005)
        gone = now()
        while available() - free_before < count * size * 9 // 10 and now() < deadline:
            time.sleep(0.005)
        freed_at = now()
        if now() >= deadline:
            warn(f"the unit's space was not freed within {b.opts.step_timeout} s")
        else:
            freed = round(elapsed(gone, freed_at), 4)
        events = [json.loads(line) for line in read_text(f"{b.mount.store}/events.jsonl").splitlines()]
        unit_events = [e for e in events if e.get("event") == "evicted" and e.get("path", "").startswith("hot/unit")]
        passes = ("one pass" if len(unit_events) == 1 and unit_events[0].get("files") == count
                  else f"{len(unit_events)} events")
        log(f"    unit of {count} files: {passes}; space back {freed} s after its names went")
    except (OSError, ValueError) as error:
        warn(f"unit eviction measurement failed: {error}")
    b.results.record("unit_pass", "mount", passes)
    b.results.record("unit_freed", "mount", freed)


def run_preview(b, pool, files):
    """`cachefs preview POOL --size 1M --json` of the pool about to be evicted: its time
    (every file but about a thousand is listed), and that it wrote nothing to the index
    (the WAL's size and time, and the database's, unchanged)."""
    index = [f"{b.mount.store}/index.sqlite", f"{b.mount.store}/index.sqlite-wal"]
    seconds, writes = FAIL, FAIL
    def state():
        return [(os.stat(path).st_size, os.stat(path).st_mtime_ns) for path in index]
    try:
        # The durability thread marks the new files synced in rounds 2 s apart: wait until the
        # index has been still for 2.5 s, so only the preview could change it.
        settle_by, before, still_since = now() + 20, state(), now()
        while now() < settle_by and now() - still_since < 2.5:
            time.sleep(0.25)
            current = state()
            if current != before:
                before, still_since = current, now()
        t0 = now()
        out = f"{b.work}/preview.json"
        rc = b.steps.run(out, [b.cachefs, "preview", pool, "--size", "1M", "--json"])
        t1 = now()
        after = state()
        listed = json.loads(read_text(out))["total_files"] if rc == 0 else None
        if rc == 0 and files is not None and listed is not None and listed > files // 2:
            seconds = round(elapsed(t0, t1), 4)
            writes = "none" if before == after else "index changed"
            log(f"    previewed {listed} of {files} files in {seconds} s; index {writes}")
        else:
            warn(f"preview failed or listed too little (rc {rc}, listed {listed} of {files})")
    except (OSError, ValueError, KeyError) as error:
        warn(f"preview measurement failed: {error}")
    b.results.record("preview", "mount", seconds)
    b.results.record("preview_writes", "mount", writes)


def read_text(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def fmt_rate(value):
    return f"{value:.0f} files/s" if is_number(value) else str(value)


def hot_read(b, path):
    """MiB/s of warm sequential reads of the file, looping over it for 2 s."""
    if measure.fio_run(b, f"--filename={path}", "--rw=read", "--bs=1M", f"--size={b.opts.hot_mib << 20}",
                       "--time_based", "--runtime=2"):
        return measure.fio_field(b, 7, 1024)
    warn(f"hot read of {path} failed")
    return FAIL


def run_hot_read(b):
    """Warm reads of a HOT_MIB file in pool hot (max_size 0), idle, then while the
    evictor empties pool data: a store of its own, built offline with NHOT files of
    1 KiB in data (scripts/lib/bench-synthetic-store.py: as if left by an earlier
    session), mounted; the hot file is written and read once (untimed), HOT_READS
    idle reads, then data's max_size goes to 1 MiB and HOT_READS reads run while
    the evictor removes the files. A busy read counts only if data still held more
    than its limit's worth of files when it ended (the evictor was still working
    through the whole read) and fewer than when it began; NHOT is sized from the
    evict row's rate of this run so that all of them do. Nothing else writes
    meanwhile: the reads compete with the evictor alone."""
    o = b.opts
    n = o.nhot
    rate = b.results.last("evict", "mount")
    if is_number(rate):
        # The busy window: HOT_READS reads of 2 s plus fio's start and getfattr; twice that.
        n = min(max(int(rate * (o.hot_reads * 2.5 + 1) * 2), o.nhot), 3000000)
    b.use_store(f"{b.work}/hot-store", f"{b.work}/hot-mnt")
    pools = ["--pool", "data=0", "--pool", "hot=0"]
    b.mount.mount(pools)
    b.mount.unmount()
    log(f"    building a store with {n} files of 1 KiB in data (offline)")
    if b.steps.run(f"{b.work}/synthetic.out", ["python3", f"{b.repo_root}/scripts/lib/bench-synthetic-store.py",
                                               b.mount.store, n, 1024]) != 0:
        warn("building the hot-read store failed")
        b.results.record("hot", "mount", FAIL)
        b.results.record("hot", "direct", FAIL)
        b.remove(b.mount.store, b.mount.mnt)
        b.use_main_store()
        return
    b.mount.mount(pools)
    b.mount.check_alive()
    mnt = b.mount.mnt
    path = f"{mnt}/hot/hot.bin"
    idle, busy = [], []
    f0 = measure.cache_attr_int(f"{mnt}/data", "files")
    if f0 != n:
        warn(f"data holds {f0 if f0 is not None else FAIL} files after mount, expected {n}")
    if not measure.fio_run(b, f"--filename={path}", "--rw=write", "--bs=1M", f"--size={o.hot_mib << 20}",
                           "--end_fsync=1"):
        warn(f"writing {path} failed")
        idle = [FAIL]
    else:
        measure.warm_file(b, path)
        for _ in range(o.hot_reads):
            idle.append(hot_read(b, path))
        # 1 MiB holds 1,024 files of 1 KiB: more than that means the evictor is not done.
        t0 = now()
        if not measure.set_cache_attr(f"{mnt}/data", "max_size", "1M"):
            warn("setting data's max_size failed")
        f1 = 0
        for i in range(o.hot_reads):
            f0 = measure.cache_attr_int(f"{mnt}/data", "files") or 0
            value = hot_read(b, path)
            f1 = measure.cache_attr_int(f"{mnt}/data", "files") or 0
            if 1024 < f1 < f0:
                busy.append(value)
            else:
                log(f"    busy read {i + 1}: data went from {f0} to {f1} files: not during eviction, not counted")
        t1 = now()
        evicted = n - f1
        log(f"    evictor removed {evicted} files in the busy window ({evicted / elapsed(t0, t1):.0f} files/s), "
            f"{f1} left")
        if not busy:
            warn(f"eviction of {n} files did not outlast a single busy read")
            busy = [FAIL]
    idle_m, busy_m = median(idle), median(busy)
    log(f"    hot reads idle: {' '.join(str(v) for v in idle)} MiB/s; "
        f"while evicting: {' '.join(str(v) for v in busy)} MiB/s")
    b.mount.check_alive()
    b.mount.unmount()
    b.remove(b.mount.store, b.mount.mnt)
    b.use_main_store()
    b.results.record("hot", "mount", busy_m if busy_m is not None else FAIL)
    b.results.record("hot", "direct", idle_m if idle_m is not None else FAIL)
    b.results.progress("hot")
