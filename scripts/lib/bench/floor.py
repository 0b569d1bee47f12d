"""The floor under the FUSE rows: floorfs (floorfs.c beside this file), a filesystem that
does nothing a cache must do (its files' bytes in memory, OPEN and FLUSH declined, names
and attributes kept for a day). A row run on it measures the kernel's FUSE path alone, the
most any FUSE filesystem can reach on this machine; the bench prints a target's ratio beside
the floor's, so a target above the floor shows as one."""
import os
import shutil
import subprocess

from .core import BenchError, log
from .mounts import ReferenceMount

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floorfs.c")


def floorfs_binary(b):
    """WORK/bin/floorfs, compiled once per bench with cc (or the Swift toolchain's clang)
    against libfuse3 (pkg-config fuse3; scripts/lib/install-deps.sh installs both)."""
    binary = f"{b.work}/bin/floorfs"
    if os.access(binary, os.X_OK):
        return binary
    compiler = shutil.which("cc") or shutil.which("clang")
    if not compiler:
        raise BenchError(f"no cc or clang to compile {SOURCE}")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True, text=True)
    if flags.returncode != 0:
        raise BenchError(f"pkg-config fuse3 failed (libfuse3-dev missing?): {flags.stderr.strip()}")
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    built = subprocess.run([compiler, "-O2", "-Wall", "-o", binary, SOURCE, *flags.stdout.split()],
                           capture_output=True, text=True)
    if built.returncode != 0:
        raise BenchError(f"compiling {SOURCE} failed: {built.stderr.strip()[-500:]}")
    log(f"    floor: compiled {SOURCE}")
    return binary


class FloorMount(ReferenceMount):
    """floorfs with FILES files of SIZE bytes at MNT, run as passthrough_hp is (a child of the
    bench, in the foreground, its pid the serving process)."""

    def __init__(self, bench, mnt, size, files):
        super().__init__(bench, floorfs_binary(bench), mnt, mnt)
        self.size = size
        self.files = files

    def command(self):
        return [self.binary, str(self.size), str(self.files), self.mnt, "-f"]
