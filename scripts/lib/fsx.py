#!/usr/bin/env python3
"""An fsx-style file exerciser: random writes, reads, mapped reads, truncates, hole punches,
zero ranges, allocations, copy_file_range and reopens on one file, done alike on an oracle
file (on ext4) and on the file under test (in a cachefs pool). After every operation the
two must have answered the same (bytes read, or the errno), and after every few the two
files must have the same size and contents. Debian packages no fsx (xfstests' or LTP's),
so this one stands in for it (Tests/IntegrationTests/FsxTests.swift runs it).

Usage: fsx.py --seed N --ops N [--max-size BYTES] ORACLE TESTED
Prints one summary line on success. On the first difference it prints the seed, the
operation's number and the last operations, and exits 1: `--seed N` repeats the run.
"""

import argparse
import ctypes
import mmap
import os
import random
import sys

sys.dont_write_bytecode = True

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE = 0x01, 0x02, 0x10
FALLOCATE_MODES = {
    "allocate": 0,
    "allocate-keep": KEEP_SIZE,
    "punch": PUNCH_HOLE | KEEP_SIZE,
    "zero": ZERO_RANGE,
    "zero-keep": ZERO_RANGE | KEEP_SIZE,
}
BLOCK = 4096
# How often each operation is drawn.
WEIGHTS = {"write": 30, "read": 25, "mapread": 8, "truncate": 8, "fallocate": 14, "copy": 6, "reopen": 4,
           "fsync": 2, "compare": 3}


class Mismatch(Exception):
    pass


def fallocate(fd, mode, offset, length):
    if LIBC.fallocate(fd, FALLOCATE_MODES[mode], offset, length) != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))


def outcome(call):
    """What a call answered: ("ok", value) or ("errno", number)."""
    try:
        return ("ok", call())
    except OSError as error:
        return ("errno", error.errno)


def mapped_read(fd, offset, length):
    """Bytes through a private mapping (FUSE refuses shared ones for direct-IO files)."""
    size = os.fstat(fd).st_size
    if size == 0 or offset >= size:
        return b""
    with mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ) as view:
        return view[offset:min(size, offset + length)]


class Exerciser:
    def __init__(self, oracle, tested, rng, max_size):
        self.paths = (oracle, tested)
        self.rng = rng
        self.max_size = max_size
        self.fds = [os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644) for path in self.paths]
        self.history = []
        self.counts = {}

    def offset(self):
        """Near a block boundary half the time: partial blocks are where encryption works hardest."""
        if self.rng.random() < 0.5:
            boundary = self.rng.randrange(0, self.max_size // BLOCK + 1) * BLOCK
            return min(self.max_size - 1, max(0, boundary + self.rng.randint(-3, 3)))
        return self.rng.randrange(0, self.max_size)

    def length(self):
        return self.rng.choice((1, self.rng.randint(1, 64), self.rng.randint(1, BLOCK),
                                self.rng.randint(1, 4 * BLOCK), self.rng.randint(1, 16 * BLOCK)))

    def both(self, what, call):
        """Runs `call(fd)` on both files; they must answer alike."""
        self.history.append(what)
        answers = [outcome(lambda fd=fd: call(fd)) for fd in self.fds]
        if answers[0] != answers[1]:
            describe = [a if a[0] == "errno" or not isinstance(a[1], bytes) else ("ok", f"{len(a[1])} bytes")
                        for a in answers]
            raise Mismatch(f"{what}: ext4 answered {describe[0]}, the mount {describe[1]}"
                           + self.first_difference(answers))
        return answers[0]

    @staticmethod
    def first_difference(answers):
        a, b = answers[0][1], answers[1][1]
        if not (isinstance(a, bytes) and isinstance(b, bytes)):
            return ""
        at = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
        return f" (first difference at byte {at} of the read)"

    def step(self):
        kind = self.rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
        self.counts[kind] = self.counts.get(kind, 0) + 1
        offset, length = self.offset(), self.length()
        if kind == "write":
            length = min(length, self.max_size - offset) or 1
            data = self.rng.randbytes(length)
            self.both(f"write {offset} +{length}", lambda fd: os.pwrite(fd, data, offset))
        elif kind == "read":
            self.both(f"read {offset} +{length}", lambda fd: os.pread(fd, length, offset))
        elif kind == "mapread":
            self.both(f"mapped read {offset} +{length}", lambda fd: mapped_read(fd, offset, length))
        elif kind == "truncate":
            self.both(f"truncate {offset}", lambda fd: os.ftruncate(fd, offset))
        elif kind == "fallocate":
            mode = self.rng.choice(list(FALLOCATE_MODES))
            length = min(length, self.max_size - offset) or 1
            self.both(f"fallocate {mode} {offset} +{length}", lambda fd: fallocate(fd, mode, offset, length))
        elif kind == "copy":
            # copy_file_range within the file, ranges apart (overlapping ones are EINVAL).
            target = self.offset()
            if abs(target - offset) < length:
                target = min(self.max_size - 1, offset + length)
            self.both(f"copy_file_range {offset} +{length} to {target}",
                      lambda fd: os.copy_file_range(fd, fd, length, offset, target))
        elif kind == "reopen":
            self.history.append("close and reopen")
            for i, path in enumerate(self.paths):
                os.close(self.fds[i])
                self.fds[i] = os.open(path, os.O_RDWR)
        elif kind == "fsync":
            self.both("fsync", os.fsync)
        self.compare_sizes()
        if kind == "compare":
            self.compare_whole()

    def compare_sizes(self):
        sizes = [os.fstat(fd).st_size for fd in self.fds]
        if sizes[0] != sizes[1]:
            raise Mismatch(f"after {self.history[-1]}: size {sizes[1]} on the mount, {sizes[0]} on ext4")

    def compare_whole(self):
        self.history.append("compare whole files")
        contents = []
        for path in self.paths:
            with open(path, "rb") as f:
                contents.append(f.read())
        if contents[0] != contents[1]:
            raise Mismatch("whole files differ" + self.first_difference([("ok", contents[0]), ("ok", contents[1])]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--max-size", type=int, default=256 * 1024)
    parser.add_argument("oracle")
    parser.add_argument("tested")
    args = parser.parse_args()
    exerciser = Exerciser(args.oracle, args.tested, random.Random(args.seed), args.max_size)
    number = 0
    try:
        for number in range(1, args.ops + 1):
            exerciser.step()
        exerciser.compare_whole()
    except Mismatch as mismatch:
        print(f"fsx: seed {args.seed}: operation {number} differs: {mismatch}")
        print("last operations:\n  " + "\n  ".join(exerciser.history[-15:]))
        return 1
    counts = ", ".join(f"{count} {kind}" for kind, count in sorted(exerciser.counts.items()))
    print(f"fsx: seed {args.seed}: {args.ops} operations alike ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
