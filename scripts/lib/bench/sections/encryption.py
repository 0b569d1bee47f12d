"""--encryption: the same work on an encrypted store and a plaintext one, both mounted,
interleaved in each run (issue 21's targets as the ratio encrypted / plaintext)."""
import os

from .. import measure
from ..cipher import BLOCK_SIZES, aes_use, cipher_costs
from ..core import BenchError, FAIL, drop_caches, log
from ..mounts import Mount, unmount_and_remove
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
    d("enc_cpu_read", "daemon CPU per MiB read, uncached", "µs", "time")
    d("enc_cpu_write", "daemon CPU per MiB written", "µs", "time")
    d("enc_aes", "AES instructions: CPU / BoringSSL", "text", "text", "yes / used")
    for size in BLOCK_SIZES:
        d(f"enc_seal_{size}", f"seal CPU per MiB, {size >> 10} KiB blocks", "µs", "abs")
        d(f"enc_open_{size}", f"open CPU per MiB, {size >> 10} KiB blocks", "µs", "abs")


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
            before = measure.daemon_cpu_sample(mounts[side].daemon_pid)
            rate = measure.seq_read(b, path)
            b.results.record("enc_cpu_read", side, per_mib(before, mounts[side], b.opts.seq_mib))
            if b.can_drop_caches:
                b.results.record("enc_seq_cold", side, rate)
            b.results.record("enc_seq_warm", side, measure.seq_read(b, path))
        for side, _ in SIDES:
            path = f"{mounts[side].mnt}/data/seq.bin"
            if b.can_drop_caches:
                drop_caches()
            b.results.record("enc_rand", side, measure.rand_read(b, path, uncached=True))
        for fsync in (0, 1):
            for side, _ in SIDES:
                path = f"{mounts[side].mnt}/data/write.bin"
                os.sync()
                before = measure.daemon_cpu_sample(mounts[side].daemon_pid)
                b.results.record("enc_write_fs" if fsync else "enc_write", side, measure.seq_write(b, path, fsync))
                if not fsync:
                    b.results.record("enc_cpu_write", side, per_mib(before, mounts[side], b.opts.write_mib))
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
        record_cipher(b)
        for key in ("enc_seq_cold", "enc_seq_warm", "enc_rand", "enc_write", "enc_write_fs", "enc_create",
                    "enc_stat_cold", "enc_cpu_read", "enc_cpu_write"):
            b.results.progress(key)
    finally:
        unmount_and_remove(b, mounts.values())


def per_mib(before, mount, mebibytes):
    """µs of the daemon's CPU per MiB since `before`."""
    return measure.cpu_per_op(before, measure.daemon_cpu_sample(mount.daemon_pid), mebibytes)


def record_cipher(b):
    """The cipher alone: CPU per MiB sealed and opened at each block size (the block
    size's choice, see docs/encryption.md), and whether AES instructions are used (once a bench)."""
    for size, (seal, open_) in cipher_costs(b).items():
        b.results.record(f"enc_seal_{size}", "mount", seal)
        b.results.record(f"enc_open_{size}", "mount", open_)
        log(f"    cipher, {size >> 10} KiB blocks: seal {seal} µs/MiB, open {open_} µs/MiB")
    if not b.results.metrics["enc_aes"].mount:
        use = aes_use(b)
        b.results.record("enc_aes", "mount", use)
        log(f"    AES instructions (CPU flag / BoringSSL): {use}")
