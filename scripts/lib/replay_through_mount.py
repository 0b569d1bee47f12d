#!/usr/bin/env python3
"""Replays a cache trace through a cachefs pool, as an app that caches files does.

Each request of the trace (CSV `key,size[,op]`, op `get` by default) tries to open and
read POOL_DIR/KEY: a hit if it opens and reads whole; otherwise (a miss) the file is
created with `size` bytes. `set` writes the file whatever it held, `delete` removes it.
Prints one JSON object: requests, hits, object hit ratio, requested and hit bytes, and
the wall time. Used by the tests and by the bench's policy section.

Usage: replay_through_mount.py POOL_DIR TRACE.csv [--pace-every N --pace-seconds S]
--pace-every pauses S seconds after every N requests, for tests that want the evictor
(asynchronous) to keep up with a fast writer.
"""
import argparse
import errno
import json
import os
import sys
import time


def parse_trace(path):
    with open(path, encoding="utf-8") as trace:
        for number, line in enumerate(trace, 1):
            line = line.strip()
            if not line:
                continue
            fields = line.split(",")
            if len(fields) < 2:
                raise SystemExit(f"{path}:{number}: expected key,size[,op]")
            try:
                size = int(fields[1])
            except ValueError:
                if number == 1:
                    continue  # a header line
                raise SystemExit(f"{path}:{number}: size {fields[1]!r} is not a number")
            operation = fields[2].strip() if len(fields) > 2 and fields[2].strip() else "get"
            yield fields[0], size, operation


def safe_name(key):
    # Keys become file names: a slash or a NUL would make them paths.
    return key.replace("/", "%2F").replace("\0", "%00") or "%empty"


def read_whole(path, size):
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        total = 0
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            total += len(chunk)
        return total == size
    finally:
        os.close(fd)


def write_file(path, size, payload):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        remaining = size
        while remaining > 0:
            remaining -= os.write(fd, payload[: min(remaining, len(payload))])
    finally:
        os.close(fd)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pool_dir")
    parser.add_argument("trace")
    parser.add_argument("--pace-every", type=int, default=0)
    parser.add_argument("--pace-seconds", type=float, default=0.0)
    options = parser.parse_args()
    payload = b"c" * (1 << 16)
    requests = hits = requested_bytes = hit_bytes = 0
    start = time.monotonic()
    for key, size, operation in parse_trace(options.trace):
        path = os.path.join(options.pool_dir, safe_name(key))
        if operation == "delete":
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            continue
        if operation == "set":
            write_file(path, size, payload)
            continue
        requests += 1
        requested_bytes += size
        if read_whole(path, size):
            hits += 1
            hit_bytes += size
        else:
            try:
                write_file(path, size, payload)
            except OSError as error:
                # A file larger than its pool is refused (EFBIG): a miss that is not kept.
                if error.errno != errno.EFBIG:
                    raise
        if options.pace_every and requests % options.pace_every == 0:
            time.sleep(options.pace_seconds)
    seconds = time.monotonic() - start
    json.dump({
        "requests": requests, "hits": hits, "hit_ratio": hits / requests if requests else 0.0,
        "requested_bytes": requested_bytes, "hit_bytes": hit_bytes,
        "byte_hit_ratio": hit_bytes / requested_bytes if requested_bytes else 0.0,
        "seconds": seconds,
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
