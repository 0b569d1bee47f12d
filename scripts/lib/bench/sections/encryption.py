"""--encryption: the same work on an encrypted store and a plaintext one, both mounted,
interleaved in each run (issue 21's targets as the ratio encrypted / plaintext)."""
import os

from .. import measure
from ..core import BenchError, FAIL, drop_caches, log
from ..mounts import Mount
from .small_files import drop_dentries

SIDES = (("mount", "encrypted"), ("direct", "plaintext"))


def define(b):
    o, d = b.opts, b.results.define
    b.results.define_section("encryption", "encrypted", "plaintext")
    d("enc_seq_cold", f"seq read 1M, {o.seq_mib} MiB, uncached", "MiB/s", "rate", "0.8")
    d("enc_seq_warm", f"seq read 1M, {o.seq_mib} MiB, warm", "MiB/s", "rate", "0.95")
    d("enc_rand", "rand read 4k, from dropped caches", "IOPS", "rate", "0.7")
    d("enc_write", f"seq write 1M, {o.write_mib} MiB", "MiB/s", "rate", "0.7")
    d("enc_write_fs", f"seq write 1M, {o.write_mib} MiB + fsync", "MiB/s", "rate", "0.7")
    d("enc_create", f"create 1K x {o.nfiles}", "files/s", "rate", "0.9")
    d("enc_stat_cold", f"stat x {o.nfiles} (cold names)", "files/s", "rate", "0.9")


def run_encryption(b):
    """Mounts both stores (the encrypted one made with `cachefs keygen` and --encrypt),
    writes the big file on each (untimed), then each workload on one then the other."""
    key = f"{b.work}/store.key"
    if not os.path.exists(key) and b.steps.run(None, [b.cachefs, "keygen", key]) != 0:
        raise BenchError("cachefs keygen failed")
    mounts = {
        "mount": Mount(b, f"{b.work}/encrypted-store", f"{b.work}/encrypted-mnt"),
        "direct": Mount(b, f"{b.work}/plain-store", f"{b.work}/plain-mnt"),
    }
    mounts["mount"].mount(["--pool", "data=0", "--encrypt", "--key-file", key])
    mounts["direct"].mount(["--pool", "data=0"])
    try:
        for side, label in SIDES:
            path = f"{mounts[side].mnt}/data/seq.bin"
            log(f"    {label}: writing a {b.opts.seq_mib} MiB file (untimed)")
            if not measure.fio_run(b, f"--filename={path}", "--rw=write", "--bs=1M",
                                   f"--size={b.opts.seq_mib << 20}", "--end_fsync=1"):
                raise BenchError(f"writing {path} failed")
        for side, _ in SIDES:
            path = f"{mounts[side].mnt}/data/seq.bin"
            if b.can_drop_caches:
                drop_caches()
                b.results.record("enc_seq_cold", side, measure.seq_read(b, path))
            else:
                measure.seq_read(b, path)
            b.results.record("enc_seq_warm", side, measure.seq_read(b, path))
        for side, _ in SIDES:
            path = f"{mounts[side].mnt}/data/seq.bin"
            if b.can_drop_caches:
                drop_caches()
            b.results.record("enc_rand", side, measure.rand_read(b, path))
        for fsync in (0, 1):
            for side, _ in SIDES:
                path = f"{mounts[side].mnt}/data/write.bin"
                os.sync()
                b.results.record("enc_write_fs" if fsync else "enc_write", side, measure.seq_write(b, path, fsync))
                os.remove(path)
        for side, _ in SIDES:
            b.mount = mounts[side]     # the helper measures the daemon of the mount in use
            directory = f"{mounts[side].mnt}/data/files"
            os.mkdir(directory)
            os.sync()
            b.results.record("enc_create", side, measure.files(b, "create", directory, b.opts.nfiles, 1024).value)
            if b.can_drop_caches:
                drop_dentries(b)
                b.results.record("enc_stat_cold", side, measure.files(b, "stat", directory, b.opts.nfiles, 1024).value)
        for key in ("enc_seq_cold", "enc_seq_warm", "enc_rand", "enc_write", "enc_write_fs", "enc_create",
                    "enc_stat_cold"):
            b.results.progress(key)
    finally:
        for mount in mounts.values():
            mount.unmount()
            b.remove(mount.store)
        b.use_main_store()
