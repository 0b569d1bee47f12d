"""--scale: flatness of the name operations in one directory.

A store of its own (--pool data=0); data/bench/scale and DIRECT/scale grow side
by side with empty files (untimed, 100,000 at a time, mount side then direct
side). At SCALE_LOW files: SCALE_BATCH creates (timed), then the kernel's
dentries are dropped and SCALE_BATCH names spread evenly over the directory are
stat'ed (each a LOOKUP that reaches the daemon, counted). Then the directories
grow to SCALE_HIGH files (or as far as SCALE_BUDGET seconds of growing allow) and
the same is measured again. Measured once.
"""
import os

from .. import measure
from ..core import BenchError, count_tag, log, now, warn
from .small_files import drop_dentries, small_step


def define(b):
    o, r = b.opts, b.results
    for end, count in (("low", o.scale_low), ("high", o.scale_high)):
        r.define(f"scale_create_{end}", create_label(o.scale_batch, count), "files/s", "rate")
        r.define(f"scale_stat_{end}", stat_label(o.scale_batch, count), "files/s", "rate")
    r.define_section("daemon CPU per op", "mount", "-")
    for end in ("low", "high"):
        r.define(f"cpu_scale_create_{end}", "  " + r.label(f"scale_create_{end}"), "µs", "abs")
        r.define(f"cpu_scale_stat_{end}", "  " + r.label(f"scale_stat_{end}"), "µs", "abs")


def create_label(batch, count):
    return f"create 0B x {batch} at {count_tag(count)} files"


def stat_label(batch, count):
    return f"cold stat x {batch} at {count_tag(count)} files"


def grow(b, target, start):
    while b.scale_count < target:
        if now() - start > b.opts.scale_budget:
            warn(f"scale: stopped growing at {b.scale_count} files after {b.opts.scale_budget} s (SCALE_BUDGET)")
            return
        k = min(target - b.scale_count, 100000)
        for side in ("mount", "direct"):
            t0 = now()
            directory = f"{b.side_dir(side)}/scale"
            if b.steps.run(None, [b.files_bin, "-s", b.scale_count, "create", directory, k, 0]) != 0:
                raise BenchError(f"scale: creating files in {directory} failed")
            log(f"    {side}: {b.scale_count + k} files ({k / (now() - t0):.0f} creates/s)")
        b.scale_count += k
        b.mount.check_alive()


def measure_end(b, end):
    o, r = b.opts, b.results
    if end == "high":
        for key, label in (("scale_create_high", create_label(o.scale_batch, b.scale_count)),
                           ("scale_stat_high", stat_label(o.scale_batch, b.scale_count))):
            r.metrics[key].label = label
            r.metrics[f"cpu_{key}"].label = "  " + label
    os.sync()
    for side in ("mount", "direct"):
        small_step(b, f"scale_create_{end}", "", side, "-s", b.scale_count, "create", f"{b.side_dir(side)}/scale",
                   o.scale_batch, 0)
    b.scale_count += o.scale_batch
    step = b.scale_count // o.scale_batch
    for side in ("mount", "direct"):
        if b.can_drop_caches:
            drop_dentries(b)
        small_step(b, f"scale_stat_{end}", "", side, "-k", step, "stat", f"{b.side_dir(side)}/scale",
                   o.scale_batch, 0)
    r.progress(f"scale_create_{end}")
    r.progress(f"scale_stat_{end}")


def run_scale(b):
    o = b.opts
    start = now()
    if not b.can_drop_caches:
        warn("cannot drop the kernel's dentries: the scale stats are not cold")
    b.use_store(f"{b.work}/scale-store", f"{b.work}/scale-mnt")
    b.mount.mount()
    b.mount.check_alive()
    os.makedirs(f"{b.mount.mnt}/data/bench/scale", exist_ok=True)
    os.makedirs(f"{b.direct}/scale", exist_ok=True)
    log(f"==> scale: growing to {o.scale_low} files")
    grow(b, o.scale_low, start)
    measure_end(b, "low")
    log(f"==> scale: growing to {o.scale_high} files (at most {o.scale_budget} s)")
    grow(b, o.scale_high, start)
    measure_end(b, "high")
    log(f"    daemon RSS with {b.scale_count} files: {measure.daemon_rss_mib(b.mount.daemon_pid)} MiB")
    b.mount.check_alive()
    b.mount.unmount()
    log("    removing the scale directories")
    b.remove(b.mount.store, b.mount.mnt, f"{b.direct}/scale")
    b.use_main_store()


