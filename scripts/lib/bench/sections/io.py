"""Workloads 1-3: sequential and random reads, sequential writes (fio and dd)."""
import os

from .. import measure
from ..core import BenchError, drop_caches, log


def define(b):
    o, d = b.opts, b.results.define
    d("seq_cold", f"seq read 1M, {o.seq_mib} MiB, cold", "MiB/s", "rate")
    d("seq_warm", f"seq read 1M, {o.seq_mib} MiB, warm", "MiB/s", "rate", "0.9")
    d("rand_warm", "rand read 4k, warm", "IOPS", "rate", "0.9")
    d("write", f"seq write 1M, {o.write_mib} MiB", "MiB/s", "rate", "0.25")
    d("write_fs", f"seq write 1M, {o.write_mib} MiB + fsync", "MiB/s", "rate", "0.6")
    d("dd_write", f"dd write 1M, {o.write_mib} MiB (write-only)", "MiB/s", "rate", "0.25")
    d("dd_write_fs", f"dd write 1M, {o.write_mib} MiB + fsync", "MiB/s", "rate", "0.6")


def setup_data(b):
    """Untimed: the big file and the listing directory, on both sides."""
    for side in ("mount", "direct"):
        directory = b.side_dir(side)
        os.makedirs(f"{directory}/many", exist_ok=True)
        log(f"    {side}: writing a {b.opts.seq_mib} MiB file, creating {b.opts.nls} files")
        if not measure.fio_run(b, f"--filename={directory}/seq.bin", "--rw=write", "--bs=1M",
                               f"--size={b.opts.seq_mib << 20}", "--end_fsync=1"):
            raise BenchError(f"setup: writing {directory}/seq.bin failed")
        if b.steps.run(None, [b.files_bin, "create", f"{directory}/many", b.opts.nls, 0]) != 0:
            raise BenchError(f"setup: creating files in {directory}/many failed")
    os.sync()


def run_seq_read(b):
    """Cold then warm on one side before the other: dropping caches for the direct
    side's cold run would otherwise make the mount's "warm" run cold."""
    for side in ("mount", "direct"):
        path = f"{b.side_dir(side)}/seq.bin"
        if b.can_drop_caches:
            drop_caches()
            b.results.record("seq_cold", side, measure.seq_read(b, path))
        else:
            measure.seq_read(b, path)      # only warms the cache
        b.results.record("seq_warm", side, measure.seq_read(b, path))
    if b.can_drop_caches:
        b.results.progress("seq_cold")
    b.results.progress("seq_warm")


def run_rand_read(b):
    """Each side's file is read (untimed) just before: the mount side's cache was
    dropped by run_seq_read for the direct side's cold read."""
    for side in ("mount", "direct"):
        path = f"{b.side_dir(side)}/seq.bin"
        measure.warm_file(b, path)
        b.results.record("rand_warm", side, measure.rand_read(b, path))
    b.results.progress("rand_warm")


def run_seq_write(b):
    for tool in ("fio", "dd"):
        for fsync in (0, 1):
            key = "write" if tool == "fio" else "dd_write"
            if fsync:
                key += "_fs"
            for side in ("mount", "direct"):
                path = f"{b.side_dir(side)}/write.bin"
                os.sync()    # so writeback of earlier runs does not overlap this one
                if tool == "fio":
                    value = measure.seq_write(b, path, fsync)
                else:
                    value = measure.dd_write(b, path, fsync)
                b.results.record(key, side, value)
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass
            b.results.progress(key)
