"""The kill -9 cycle the links and origin phases of scripts/torture share."""

import json
import subprocess

import torture_support as S


class KillCycles:
    """Per cycle: mount, start worker processes, kill -9 the daemon at a random moment, read
    the one JSON line each worker printed last, remount, check, then a clean unmount (daemon
    exit 0) and `cachefs verify` clean. A subclass sets `label` and `worker` (for messages) and
    gives `start_workers(mnt)`, `worker_problems(summary)` and `check(mnt)`."""

    label = "kill"
    worker = "worker"

    def __init__(self, ctx, rng, daemon):
        self.ctx, self.res, self.wd = ctx, ctx.results, ctx.wd
        self.rng, self.daemon = rng, daemon
        self.cycles_run = 0

    def run(self, cycles):
        for cycle in range(1, cycles + 1):
            if self.ctx.abort.is_set():
                break
            try:
                problems = self.cycle()
            except (OSError, S.MountFailed) as error:
                problems = [f"ERROR {type(error).__name__}: {error}"]
                self.daemon.force_abort()
            self.res.check(f"{self.label} cycle {cycle}", problems, None)
            self.cycles_run += 1

    def cycle(self):
        d = self.daemon
        d.start()
        workers = self.start_workers(d.mnt)
        self.ctx.abort.wait(self.rng.uniform(0.5, 2.5))
        problems = []
        stuck = d.kill9(patience=5.0)
        if stuck:
            problems.append(f"HANG the daemon was still there 5 s after SIGKILL (threads: {stuck})")
        for worker in workers:
            try:
                output, _ = worker.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                worker.kill()
                output, _ = worker.communicate()
                problems.append(f"HANG a {self.worker} still ran 15 s after the daemon was killed")
            try:
                summary = json.loads(output.strip().splitlines()[-1])
            except (ValueError, IndexError):
                problems.append(f"ERROR {self.worker} output unreadable: {output[-500:]}")
                continue
            problems += self.worker_problems(summary)
        d.lazy_unmount()
        d.start()
        problems += self.check(d.mnt)
        rc, message = d.unmount()
        if rc != 0:
            problems.append(f"UNMOUNT daemon exit {rc} {message}")
        ok, _, out = S.verify_store(self.ctx.binary, d.store)
        if not ok:
            problems.append(f"VERIFY {out}")
        return problems
