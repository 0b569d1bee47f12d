#!/usr/bin/env python3
"""A daemon killed in the middle of an eviction never takes its clients with it.

Per cycle: mount, fill the data pool's folder with FILES files of 4 KiB, start CLIENTS
processes that stat random names in that folder, lower the pool's max_size so that about
seven in eight files are evicted (the evictor tells the kernel of each removal, in the same
folder where the clients look names up), and `kill -9` the daemon 0 to 0.4 s later. Then:
  - the daemon is gone within 5 s of the kill;
  - every client has returned within 5 s of the kill (each stops at the first ENOTCONN or
    ECONNABORTED, or at its next step once told to stop; one that cannot is blocked in the
    mount);
  - a lookup of a new name answers ENOTCONN (the connection ended, rather than waiting);
  - the daemon's log says its guardian aborted the connection.
The next cycle mounts the store again (its recovery); at the end a clean unmount and
`cachefs verify` clean.

Used by scripts/torture (the death phase) and by the integration tests, as root and as a
user who is not root. Standalone: torture_death.py --binary BIN --work DIR [--cycles N]
[--seed S]; prints one line per cycle and "N passed, N failed"; exit 0 when all passed.
"""
import argparse
import errno
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torture_support as S  # noqa: E402

FILES = 4000
FILE_SIZE = 4096
CLIENTS = 4
# About one file in eight stays.
SMALL_LIMIT = FILES * FILE_SIZE // 8
DEADLINE = 5.0
ABORTED_LINE = "aborted FUSE connection"

# A client: stats random names until the connection's end answers (exit 0: ECONNABORTED for a
# request in flight when it ended, ENOTCONN after) or it finds the stop file (exit 0); any
# other error than ENOENT is a failure (exit 1). It prints "ready" once it runs.
CLIENT = r"""
import errno, os, random, sys
folder, count, seed, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(seed)
print("ready", flush=True)
while not os.path.exists(stop):
    try:
        os.stat(f"{folder}/f{rng.randrange(count)}")
    except FileNotFoundError:
        pass
    except OSError as error:
        if error.errno in (errno.ENOTCONN, errno.ECONNABORTED):
            sys.exit(0)
        print(f"client: {error}", flush=True)
        sys.exit(1)
"""


class DeathCycles:
    """`results` is torture's Results (check(name, problems, category)) or the standalone tally."""

    def __init__(self, binary, work, results, rng):
        self.binary, self.work, self.res, self.rng = binary, work, results, rng
        # A space in the path: the guardian finds the mount in mountinfo, where it is `\040`.
        self.store = os.path.join(work, "death store")
        self.mnt = os.path.join(work, "death mnt")
        self.log_path = os.path.join(work, "death-daemon.log")
        self.daemon = S.Daemon(binary, self.store, self.mnt, ["-o", "min_free=0"], self.log_path, "death")
        self.cycles_run = 0
        self.deadline = DEADLINE

    def run(self, cycles):
        for cycle in range(1, cycles + 1):
            try:
                problems = self.cycle(cycle)
            except (OSError, S.MountFailed) as error:
                problems = [f"ERROR {type(error).__name__}: {error}"]
                self.daemon.force_abort()
            self.res.check(f"death cycle {cycle}: clients answered within {DEADLINE:.0f} s of kill -9", problems, "hangs")
            self.cycles_run += 1
        self.res.check("death: the store mounts, unmounts cleanly and verifies", self.finish(), None)

    def cycle(self, cycle):
        d = self.daemon
        d.start()
        data = os.path.join(self.mnt, "data")
        os.setxattr(data, "user.cache.max_size", b"64M")
        payload = os.urandom(FILE_SIZE)
        for index in range(FILES):
            with open(os.path.join(data, f"f{index}"), "wb") as f:
                f.write(payload)
        stop = os.path.join(self.work, "stop-clients")
        if os.path.exists(stop):
            os.unlink(stop)
        clients = [subprocess.Popen([sys.executable, "-c", CLIENT, data, str(FILES), str(cycle * 100 + k), stop],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                   for k in range(CLIENTS)]
        for client in clients:
            client.stdout.readline()
        os.setxattr(data, "user.cache.max_size", str(SMALL_LIMIT).encode())
        time.sleep(self.rng.uniform(0.0, 0.4))
        log_before = len(d.log_since_start())
        killed_at = time.monotonic()
        stuck = d.kill9(patience=DEADLINE)
        with open(stop, "w"):
            pass
        problems = []
        if stuck:
            problems.append(f"HANG the daemon was still there {DEADLINE:.0f} s after SIGKILL (threads: {stuck})")
        problems += self.collect(clients, killed_at)
        # A name never looked up: the kernel has nothing cached and must ask.
        try:
            os.stat(os.path.join(data, f"never-{cycle}-{self.rng.randrange(1 << 30)}"))
            problems.append("the mount still answered after its daemon died")
        except OSError as error:
            if error.errno != errno.ENOTCONN:
                problems.append(f"the dead mount answered {S.ename(error)}, not ENOTCONN")
        # The guardian writes its line after the abort, a moment after the daemon's end.
        if not wait_until(DEADLINE, lambda: any(ABORTED_LINE in line for line in d.log_since_start()[log_before:])):
            problems.append(f"no '{ABORTED_LINE}' in the daemon's log: "
                            + " | ".join(S.tail(self.log_path, 5, d.log_offset)))
        d.lazy_unmount()
        return problems

    def collect(self, clients, killed_at):
        problems = []
        for number, client in enumerate(clients):
            left = max(0.1, killed_at + DEADLINE - time.monotonic())
            try:
                output, _ = client.communicate(timeout=left)
            except subprocess.TimeoutExpired:
                problems.append(f"HANG client {number} still blocked {DEADLINE:.0f} s after the kill "
                                f"({wait_channel(client.pid)})")
                # Free it, so the next cycle starts clean: the abort answers what it waits for.
                S.abort_connection(self.mnt)
                client.kill()
                client.communicate()
                continue
            if client.returncode != 0:
                problems.append(f"client {number} exited {client.returncode}: {output.strip()[-300:]}")
        return problems

    def finish(self):
        d = self.daemon
        try:
            d.start()
        except S.MountFailed as error:
            return [f"MOUNT {error}"]
        rc, message = d.unmount()
        problems = [] if rc == 0 else [f"UNMOUNT daemon exit {rc} {message}"]
        ok, _, out = S.verify_store(self.binary, self.store)
        return problems + ([] if ok else [f"VERIFY {out}"])


def wait_until(seconds, condition):
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def wait_channel(pid):
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return f"waiting in {f.read().strip() or '-'}"
    except OSError:
        return "gone"


class Tally:
    """The standalone results: a line per check, then the closing count."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, problems, _category):
        if problems:
            self.failed += 1
            print(f"FAIL {name}")
            for problem in problems:
                print(f"     {problem}")
        else:
            self.passed += 1
            print(f"ok   {name}")
        sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--work", required=True, help="a folder for the store, the mountpoint and the log")
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    print(f"death cycles: {args.cycles}, seed {seed}", flush=True)
    # fusectl is left as it is: the daemon mounts it when it runs as root (what is tested).
    os.makedirs(args.work, exist_ok=True)
    tally = Tally()
    cycles = DeathCycles(os.path.abspath(args.binary), os.path.abspath(args.work), tally, random.Random(seed))
    try:
        cycles.run(args.cycles)
    finally:
        cycles.daemon.force_abort()
    print(f"{tally.passed} passed, {tally.failed} failed", flush=True)
    return 0 if tally.failed == 0 else 1


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
