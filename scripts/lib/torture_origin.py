"""Origin phase of scripts/torture: kill -9 while read-through pools fetch."""

import hashlib
import os
import random
import subprocess
import sys

import origin_workload
import torture_support as S
from torture_kill_cycles import KillCycles
from torture_phases import aux_fs

READERS = 3
# Sizes of the origin's files: empty, around a page, around a 256 KiB chunk, some MiB.
SIZES = [0, 1, 4095, 4096, 65_537, 262_144, 262_145, 300_000, 1 << 20, (1 << 20) + 123, 2_500_000, 3 << 20,
         3_500_000]

# An exec: origin over the same folder, slowed down: 64 KiB at a time, 10 ms apart.
SLOW_ORIGIN = """#!/bin/sh
files='{files}'
if [ "$1" = --size ]; then
  [ -f "$files/$2" ] || exit 44
  stat -c %s "$files/$2"
  exit 0
fi
[ -f "$files/$1" ] || exit 44
size=$(stat -c %s "$files/$1")
block=0
while [ $((block * 65536)) -lt "$size" ]; do
  dd if="$files/$1" bs=65536 skip=$block count=1 status=none || exit 1
  block=$((block + 1))
  sleep 0.01
done
"""


class OriginCycles(KillCycles):
    """Per cycle: mount a store with two read-through pools of one origin folder (`data`:
    file://, `slow`: a throttled exec: program), each smaller than the origin, so fetched files
    are evicted and fetched again; run reader processes (origin_workload.py: whole files,
    ranges, listings with stat) for a random 0.5-2.5 s, kill -9 the daemon while fetches are in
    flight, remount, and check: every file a pool holds reads byte-identical to the origin
    (a fetch cut by the kill is never served as complete), usage and files count exactly the
    stored files (the names only shown count nothing), a file not held is fetched whole again,
    the daemon exits 0 at unmount and `cachefs verify` says clean."""

    label = "origin"
    worker = "reader"
    POOLS = ("data", "slow")

    def __init__(self, ctx):
        rng = random.Random(ctx.seed * 17 + 3)
        root = os.path.join(ctx.workdir, "origin")
        self.files = os.path.join(root, "files")
        os.makedirs(self.files)
        self.expected = {}
        for index, size in enumerate(SIZES):
            data = rng.randbytes(size)
            name = f"f{index:02d}-{size}"
            with open(os.path.join(self.files, name), "wb") as f:
                f.write(data)
            self.expected[name] = hashlib.sha256(data).hexdigest()
        program = os.path.join(root, "slow-origin.sh")
        with open(program, "w") as f:
            f.write(SLOW_ORIGIN.format(files=self.files))
        os.chmod(program, 0o755)
        super().__init__(ctx, rng, S.Daemon(
            ctx.binary, os.path.join(aux_fs(ctx), "origin-store"), os.path.join(ctx.workdir, "aux", "mnt-origin"),
            ["--pool", "data=6M", "--pool", "slow=6M", "--origin", f"data=file://{self.files}",
             "--origin", f"slow=exec:{program}", "-o", "min_free=0,sweep_interval=1"],
            os.path.join(ctx.logdir, "origin-daemon.log"), "origin"))
        self.calls = {}
        self.cut = 0
        self.files_compared = 0

    def start_workers(self, mnt):
        pools = [os.path.join(mnt, pool) for pool in self.POOLS]
        return [subprocess.Popen([sys.executable, origin_workload.__file__, "read", self.files, "30",
                                  str(self.rng.randrange(1 << 30))] + pools,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for _ in range(READERS)]

    def worker_problems(self, summary):
        for name, count in summary["calls"].items():
            self.calls[name] = self.calls.get(name, 0) + count
        self.cut += summary["cut"]
        if summary["estale"]:
            self.res.note("origin reader ESTALE", summary["estale"])
        return list(summary["wrong"])

    def read(self, path):
        with self.wd.op(f"origin: read {path}"):
            with open(path, "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()

    def check(self, mnt):
        """After the remount: what the pools hold is whole, the figures count only that, and
        a file not held is fetched whole."""
        problems = []
        for pool in self.POOLS:
            directory = os.path.join(mnt, pool)
            with self.wd.op(f"origin: list {pool}"):
                names = sorted(os.listdir(directory))
            held = []
            for name in names:
                with self.wd.op(f"origin: state of {pool}/{name}"):
                    state = S.file_state(os.path.join(directory, name))
                if state != "origin":
                    held.append(name)
            for name in held:
                self.files_compared += 1
                if self.read(os.path.join(directory, name)) != self.expected.get(name):
                    problems.append(f"TORN {pool}/{name} differs from the origin after the remount")
        # Every name is looked up (stat) by the walk: figures must count only what is stored.
        problems += S.usage_check(mnt, self.wd, "origin")
        for pool in self.POOLS:
            directory = os.path.join(mnt, pool)
            for name in self.rng.sample(sorted(self.expected), 2):
                self.files_compared += 1
                if self.read(os.path.join(directory, name)) != self.expected[name]:
                    problems.append(f"WRONG {pool}/{name} fetched after the remount differs from the origin")
        return problems

    def summary_line(self):
        calls = ", ".join(f"{count} {name}" for name, count in sorted(self.calls.items()))
        return (f"  origin:                  {self.cycles_run} cycles (kill -9 each); reads {calls}; "
                f"{self.cut} cut by the kill; {self.files_compared} files compared after remounts")
