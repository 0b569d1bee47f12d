"""Links phase of scripts/torture: kill -9 during bursts of link, symlink and rename."""

import errno
import os
import random
import subprocess
import sys

import link_workload
import torture_support as S
from torture_kill_cycles import KillCycles
from torture_phases import aux_fs

BURSTS = 3


class LinkCycles(KillCycles):
    """Per cycle: mount a store whose 512 KiB pool is kept under its limit by the evictor,
    run three link_workload bursts in one directory tree, kill -9 the daemon at a random
    moment, remount, and check that every file's st_nlink equals the names found for its
    inode, every directory's is 2 + its subdirectories, usage equals the sizes of the
    distinct inodes, files their number, the daemon exits 0 at unmount and `cachefs verify` says clean."""

    label = "links"
    worker = "burst"

    def __init__(self, ctx):
        fs = aux_fs(ctx)
        super().__init__(ctx, random.Random(ctx.seed * 31 + 7),
                         S.Daemon(ctx.binary, os.path.join(fs, "links-store"),
                                  os.path.join(ctx.workdir, "aux", "mnt-links"),
                                  ["--pool", "data=512K", "-o", "min_free=0,sweep_interval=1"],
                                  os.path.join(ctx.logdir, "links-daemon.log"), "links"))
        self.calls = {}
        self.evicted_files = 0

    def start_workers(self, mnt):
        base = os.path.join(mnt, "data", "burst")
        with self.wd.op("links: mkdir"):
            os.makedirs(base, exist_ok=True)
        return [subprocess.Popen([sys.executable, link_workload.__file__, "burst", base, "30",
                                  str(self.rng.randrange(1 << 30))],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for _ in range(BURSTS)]

    def worker_problems(self, summary):
        for name, count in summary["calls"].items():
            self.calls[name] = self.calls.get(name, 0) + count
        problems = []
        for call, count in summary["unexpected"].items():
            if call.endswith("ESTALE"):
                # The evictor removes inodes under the bursts; open(2) must never say ESTALE
                # (the ESTALE tests check that), other calls on a just-evicted name may.
                self.res.note(f"burst {call}", count)
            else:
                problems.append(f"ERROR burst {call} x{count}")
        return problems

    def check(self, mnt):
        return self.check_pool(os.path.join(mnt, "data"))

    def check_pool(self, pool, tries=5):
        """Link counts and usage; retried while the evictor changes the figures under the walk."""
        problems = []
        for _ in range(tries):
            with self.wd.op("links: figures"):
                before = S.figures(pool)
            with self.wd.op("links: walk"):
                try:
                    report = link_workload.check_tree(pool)
                except FileNotFoundError:
                    continue  # the evictor took a name between the listing and its lstat
                except OSError as error:
                    if error.errno == errno.ESTALE:
                        continue  # the same, on a name the kernel still had
                    return [f"WALK {error}"]
            with self.wd.op("links: figures"):
                after = S.figures(pool)
            if before != after:
                continue
            self.evicted_files = max(self.evicted_files, after["evicted_files"])
            problems = [f"DRIFT st_nlink {entry['nlink']} for names {entry['names']}"
                        for entry in report["wrong_file_links"][:5]]
            problems += [f"DRIFT directory {entry['dir']}: st_nlink {entry['nlink']}, {entry['expected']} expected"
                         for entry in report["wrong_dir_links"][:5]]
            if after["usage"] != report["bytes"]:
                problems.append(f"DRIFT usage {after['usage']} but distinct inodes sum to {report['bytes']}")
            if after["files"] != report["files"]:
                problems.append(f"DRIFT files {after['files']} but {report['files']} distinct inodes found")
            return problems
        return [f"DRIFT figures kept changing during {tries} walks"]

    def summary_line(self):
        calls = ", ".join(f"{count} {name}" for name, count in sorted(self.calls.items()))
        return (f"  links:                   {self.cycles_run} cycles (kill -9 each); {calls}; "
                f"user.cache.evicted_files up to {self.evicted_files} after a remount")
