"""Logging, errors and the measured commands ("steps") of scripts/bench."""
import os
import signal
import subprocess
import sys
import time

FAIL = "fail"


class BenchError(Exception):
    """A fatal error: the bench stops (after unmounting) with status 1."""


class Interrupted(BaseException):
    """SIGTERM or SIGHUP: the bench stops (after unmounting) with 128 + the signal."""

    def __init__(self, signum):
        super().__init__(signum)
        self.status = 128 + signum


def log(*parts):
    print(" ".join(str(p) for p in parts), file=sys.stderr, flush=True)


def warn(message):
    print(f"bench: warning: {message}", file=sys.stderr, flush=True)


def now():
    return time.monotonic()


def elapsed(t0, t1):
    """Seconds, rounded as the table's sources are."""
    return round(t1 - t0, 4)


class Steps:
    """Runs one measured command at a time, under a deadline (`timeout`), in a
    process group of its own: a hung FUSE request cannot hang the bench, Ctrl-C
    reaches the bench alone, and kill() stops the step before unmounting under it."""

    def __init__(self, timeout_seconds):
        self.timeout = timeout_seconds
        self.current = None

    def run(self, out, cmd, stderr=None, stdin=None, env=None, deadline=None):
        """Runs cmd with stdout to the file `out` (None: /dev/null); stderr to the
        file `stderr` (None: the bench's stderr; "stdout": with stdout). Returns
        the exit status (124 when the deadline killed it, 127 if it cannot run)."""
        deadline = self.timeout if deadline is None else deadline
        full = ["timeout", "--kill-after=10", str(deadline)] + [str(c) for c in cmd]
        files = []
        try:
            stdout = open(out or os.devnull, "wb")
            files.append(stdout)
            if stderr == "stdout":
                err = subprocess.STDOUT
            elif stderr is not None:
                err = open(stderr, "ab")
                files.append(err)
            else:
                err = None
            if stdin is not None:
                inp = open(stdin, "rb")
                files.append(inp)
            else:
                inp = subprocess.DEVNULL
            proc_env = None
            if env:
                proc_env = dict(os.environ)
                proc_env.update(env)
            try:
                self.current = subprocess.Popen(full, stdout=stdout, stderr=err, stdin=inp,
                                                env=proc_env, start_new_session=True)
            except OSError as error:
                warn(f"cannot run {cmd[0]}: {error}")
                return 127
            rc = self.current.wait()
            self.current = None
            return rc
        finally:
            for f in files:
                f.close()

    def kill(self):
        """Stops a step cut short by a signal or an error."""
        proc, self.current = self.current, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except OSError:
            try:
                proc.terminate()
            except OSError:
                pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()


def drop_caches(level=3):
    """sync, then echo LEVEL > /proc/sys/vm/drop_caches."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write(f"{level}\n")


def count_tag(n):
    """100000 -> 100k, 1000000 -> 1M."""
    if n % 1000000 == 0:
        return f"{n // 1000000}M"
    if n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def read_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace").splitlines()
    except OSError:
        return []
