"""Workload 4: name operations (create, stat, rename, cold stat, unlink, mkdir,
rmdir), with the daemon's CPU per operation and the FUSE requests they send."""
import os
import shutil
import time

from .. import measure
from ..core import FAIL, drop_caches, log, warn

KEYS = ["create", "stat1", "stat2", "rename", "stat_cold", "unlink", "unlink_freed", "mkdir", "rmdir"]
# Targets from issue 7: µs of daemon CPU to stay under.
CPU_TARGETS = {"create": "100", "stat_cold": "20", "unlink_freed": "50"}


def define(b, suffix="", cpu_title=""):
    """The name-operation rows with keys + SUFFIX, and their daemon CPU rows under
    a section of their own."""
    n, d, x = b.opts.nfiles, b.results.define, suffix
    d(f"create{x}", f"create 1K x {n}", "files/s", "rate", "0.25")
    d(f"stat1{x}", f"stat x {n} (after create)", "files/s", "rate")
    d(f"stat2{x}", f"stat x {n} (repeat)", "files/s", "rate", "0.85")
    d(f"rename{x}", f"rename x {n}", "files/s", "rate", "0.3")
    d(f"stat_cold{x}", f"stat x {n} (cold names)", "files/s", "rate", "0.3")
    d(f"unlink{x}", f"unlink x {n} (synced files)", "files/s", "rate")
    d(f"unlink_freed{x}", f"unlink x {n}, until bytes gone", "files/s", "rate", "0.6")
    d(f"mkdir{x}", f"mkdir x {n}", "dirs/s", "rate", "0.3")
    d(f"rmdir{x}", f"rmdir x {n} (synced)", "dirs/s", "rate", "0.3")
    b.results.define_section("daemon CPU per op" + (f", {cpu_title}" if cpu_title else ""), "mount", "-")
    for key in ["create", "stat1", "stat2", "rename", "stat_cold", "unlink_freed", "mkdir", "rmdir"]:
        cpu_key = "cpu_" + key.removesuffix("_freed") + x
        label = "  " + b.results.label(key + x)
        if key in CPU_TARGETS:
            d(cpu_key, label, "µs", "max", CPU_TARGETS[key])
        else:
            d(cpu_key, label, "µs", "abs")


def settle(b):
    """Untimed, on both sides alike. Waits for the daemon's background sync of
    closed files (sync_interval + 1 s) and then syncs the store's filesystem, so
    that the next operations act on files whose bytes are on disk (as files
    created a while ago are), on both sides."""
    time.sleep(b.opts.sync_wait)
    os.sync()
    measure.wait_daemon_idle(b)


def drop_dentries(b):
    """Drops the kernel's dentries and inodes (echo 2 > drop_caches, after a sync:
    dirty inodes cannot be dropped), on both sides alike. Through FUSE the kernel
    forgets the names (FORGET to the daemon), so the next stat of each name is a
    LOOKUP that reaches the daemon; ext4 must look the name up in its directory
    blocks and read the inode from the inode table (both still in the page cache,
    which echo 2 keeps: neither side waits for the disk)."""
    drop_caches(2)
    measure.wait_daemon_idle(b)


def small_step(b, key, suffix, side, *args):
    """One timed helper run, recorded as KEY+SUFFIX; on the mount side the daemon's
    CPU per op and the FUSE requests."""
    n = int(args[-2])
    result = measure.files(b, *args)
    b.results.record(key + suffix, side, result.value)
    if side == "mount":
        b.results.record(f"cpu_{key}{suffix}", "mount", result.cpu_us if result.cpu_us is not None else FAIL)
        line = f"    daemon CPU per op, {key}: {result.cpu_us if result.cpu_us is not None else '?'} µs"
        if result.reqs:
            line += f"; FUSE requests per op {result.reqs[0] / n:.2f} (LOOKUP {result.reqs[1] / n:.2f})"
        log(line)
        if (key == "stat_cold" or key.startswith("scale_stat_")) and result.reqs and result.reqs[1] < n * 9 // 10:
            warn(f"cold stat: only {result.reqs[1]} LOOKUPs reached the daemon for {n} names (the kernel kept them)")
            b.results.failed = True
    return result


def run_small_files(b, suffix=""):
    """NFILES of each operation, in a fresh directory per side: create + 1 KiB write
    + close, stat right after (stat1: the kernel has the names from the creates),
    stat again (stat2), then settle() (background sync done, sync), rename every
    file, drop the kernel's dentries, stat the renamed names (stat_cold: each a
    LOOKUP through FUSE), unlink them (unlink: until the calls return;
    unlink_freed: on the mount side until the store holds none of their bytes,
    which the daemon removes after its group commit; the direct side's unlink(2)
    has freed them when it returns); then mkdir NFILES directories, settle, rmdir
    them. SUFFIX: appended to the keys (--compare-threading)."""
    n = b.opts.nfiles
    for side in ("mount", "direct"):
        base = b.side_dir(side)
        os.makedirs(base, exist_ok=True)
        directory, dirs = f"{base}/files", f"{base}/dirs"
        os.mkdir(directory)
        os.mkdir(dirs)
        os.sync()
        small_step(b, "create", suffix, side, "create", directory, n, 1024)
        small_step(b, "stat1", suffix, side, "stat", directory, n, 1024)
        small_step(b, "stat2", suffix, side, "stat", directory, n, 1024)
        settle(b)
        small_step(b, "rename", suffix, side, "-p", "f", "-t", "r", "rename", directory, n, 0)
        if b.can_drop_caches:
            drop_dentries(b)
            small_step(b, "stat_cold", suffix, side, "-p", "r", "stat", directory, n, 1024)
        os.sync()
        if side == "mount":
            result = small_step(b, "unlink", suffix, side, "-o", f"{b.mount.store}/objects", "-p", "r", "unlink",
                                directory, n, 0)
            b.results.record(f"unlink_freed{suffix}", side,
                             result.value2 if result.value2 is not None else FAIL)
        else:
            result = small_step(b, "unlink", suffix, side, "-p", "r", "unlink", directory, n, 0)
            b.results.record(f"unlink_freed{suffix}", side, result.value)
        small_step(b, "mkdir", suffix, side, "mkdir", dirs, n, 0)
        settle(b)
        small_step(b, "rmdir", suffix, side, "rmdir", dirs, n, 0)
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(dirs, ignore_errors=True)
    for key in KEYS:
        b.results.progress(key + suffix)
