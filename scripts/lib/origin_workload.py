#!/usr/bin/env python3
"""Readers of read-through pools, for the origin phase of scripts/torture.

Usage:
  origin_workload.py read ORIGIN SECONDS SEED POOL...
      For SECONDS (or until the daemon is gone) reads random names of ORIGIN (a flat folder)
      through each POOL, a pool directory whose origin serves ORIGIN: whole files (length and
      sha256 against ORIGIN's file), ranges at random offsets (bytes against ORIGIN's), and
      listings with a stat of every name (size against ORIGIN's). Prints one JSON object:
      calls made per kind, reads cut because the daemon went away (ENOTCONN, ECONNABORTED,
      which end the run), ESTALE met (a race with eviction), and "wrong": every short read,
      wrong byte, wrong size or other errno.
"""

import errno
import hashlib
import json
import os
import random
import sys
import time

sys.dont_write_bytecode = True

GONE = {errno.ENOTCONN, errno.ECONNABORTED}


class DaemonGone(Exception):
    pass


class Reader:
    def __init__(self, origin, pools, rng):
        self.origin, self.pools, self.rng = origin, pools, rng
        self.names = sorted(os.listdir(origin))
        self.sums = {}
        self.calls = {}
        self.estale = 0
        self.cut = 0
        self.wrong = []

    def expected(self, name):
        if name not in self.sums:
            with open(os.path.join(self.origin, name), "rb") as f:
                data = f.read()
            self.sums[name] = (len(data), hashlib.sha256(data).hexdigest())
        return self.sums[name]

    def origin_range(self, name, offset, length):
        with open(os.path.join(self.origin, name), "rb") as f:
            f.seek(offset)
            return f.read(length)

    def whole(self, pool, name):
        size, digest = self.expected(name)
        fd = os.open(os.path.join(pool, name), os.O_RDONLY)
        try:
            chunks, total = [], 0
            while True:
                chunk = os.read(fd, 1 << 17)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if len(data) != size:
            self.wrong.append(f"SHORT {pool}/{name}: read {len(data)} bytes, the origin has {size}")
        elif hashlib.sha256(data).hexdigest() != digest:
            self.wrong.append(f"WRONG {pool}/{name}: {size} bytes that differ from the origin's")

    def part(self, pool, name):
        size, _ = self.expected(name)
        offset = self.rng.randrange(size) if size else 0
        length = self.rng.randrange(1, 200_000)
        fd = os.open(os.path.join(pool, name), os.O_RDONLY)
        try:
            data = os.pread(fd, length, offset)
            # A short count is not the end of the file until a read returns nothing: a pread
            # the kernel split into READs returns what the first ones brought when the daemon
            # is killed before the next (then this raises ENOTCONN, a read cut by the kill).
            while data and len(data) < length:
                more = os.pread(fd, length - len(data), offset + len(data))
                if not more:
                    break
                data += more
        finally:
            os.close(fd)
        want = self.origin_range(name, offset, length)
        if data != want:
            kind = "SHORT" if len(data) < len(want) else "WRONG"
            self.wrong.append(f"{kind} {pool}/{name} [{offset}, +{length}): {len(data)} bytes read, "
                              f"{len(want)} expected{'' if kind == 'SHORT' else ' (different bytes)'}")

    def listing(self, pool, _name):
        for entry in os.scandir(pool):
            if entry.name not in self.names:
                continue
            size = os.stat(entry.path).st_size
            if size != self.expected(entry.name)[0]:
                self.wrong.append(f"SIZE {pool}/{entry.name}: st_size {size}, the origin's is "
                                  f"{self.expected(entry.name)[0]}")

    def step(self):
        kind = self.rng.choices(["whole", "part", "listing"], weights=[6, 3, 1])[0]
        pool = self.rng.choice(self.pools)
        name = self.rng.choice(self.names)
        self.calls[kind] = self.calls.get(kind, 0) + 1
        try:
            getattr(self, kind)(pool, name)
        except OSError as error:
            if error.errno in GONE:
                self.cut += 1
                raise DaemonGone() from error
            if error.errno == errno.ESTALE:
                self.estale += 1
            else:
                self.wrong.append(f"ERRNO {kind} {pool}/{name}: {errno.errorcode.get(error.errno, error.errno)} "
                                  f"{error.strerror}")

    def run(self, seconds):
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                self.step()
        except DaemonGone:
            pass
        return {"calls": self.calls, "cut": self.cut, "estale": self.estale, "wrong": self.wrong[:20]}


def main(argv):
    if len(argv) < 5 or argv[0] != "read":
        print(__doc__, file=sys.stderr)
        return 2
    origin, seconds, seed, pools = argv[1], float(argv[2]), int(argv[3]), argv[4:]
    print(json.dumps(Reader(origin, pools, random.Random(seed)).run(seconds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
