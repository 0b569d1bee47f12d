#!/usr/bin/env python3
"""The two ESTALE loops of issue 8: opens of a name that another process keeps replacing.

Usage: estale_loop.py replace|recreate|evict DIR OPENS READERS
  replace:  a writer writes DIR/target.tmp and os.replace()s it onto DIR/target in a loop;
  recreate: a writer unlinks DIR/target and creates it again in a loop;
  evict:    a writer creates DIR/target and has cachefs remove it (user.cache.clear on the
            pool, DIR's parent) in a loop: the removal comes from the daemon, not the kernel.
READERS processes open DIR/target OPENS times in total, read it whole and close it. Prints
one JSON object: how the opens ended (ok, ENOENT, ESTALE, other errno names), reads that
saw a torn version (replace only: every version is complete when it is renamed in), the
writer's iterations and errors, and the seconds taken.
"""

import errno
import json
import multiprocessing
import os
import sys
import time

sys.dont_write_bytecode = True

VERSION_SIZE = 4096


def version_bytes(iteration):
    return bytes([ord("a") + iteration % 26]) * VERSION_SIZE


def writer(mode, directory, stop, results):
    target = os.path.join(directory, "target")
    temporary = os.path.join(directory, "target.tmp")
    iterations, errors = 0, {}
    while not stop.is_set():
        try:
            if mode == "replace":
                with open(temporary, "wb") as handle:
                    handle.write(version_bytes(iterations))
                os.replace(temporary, target)
            elif mode == "evict":
                with open(target, "wb") as handle:
                    handle.write(version_bytes(iterations))
                os.setxattr(os.path.dirname(directory), "user.cache.clear", b"1")
            else:
                os.unlink(target)
                with open(target, "xb") as handle:
                    handle.write(version_bytes(iterations))
        except OSError as error:
            name = errno.errorcode.get(error.errno, str(error.errno))
            errors[name] = errors.get(name, 0) + 1
        iterations += 1
    results.put({"writer_iterations": iterations, "writer_errors": errors})


def reader(mode, directory, opens, results):
    target = os.path.join(directory, "target")
    counts = {"ok": 0, "torn": 0}
    for _ in range(opens):
        try:
            fd = os.open(target, os.O_RDONLY)
        except OSError as error:
            name = errno.errorcode.get(error.errno, str(error.errno))
            counts[name] = counts.get(name, 0) + 1
            continue
        try:
            data = b""
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                data += chunk
            counts["ok"] += 1
            if mode == "replace" and (len(data) != VERSION_SIZE or data.count(data[:1]) != VERSION_SIZE):
                counts["torn"] += 1
        except OSError as error:
            name = "read " + errno.errorcode.get(error.errno, str(error.errno))
            counts[name] = counts.get(name, 0) + 1
        finally:
            os.close(fd)
    results.put(counts)


def main():
    mode, directory, opens, readers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode not in ("replace", "recreate", "evict"):
        raise SystemExit(f"unknown mode {mode}")
    with open(os.path.join(directory, "target"), "wb") as handle:
        handle.write(version_bytes(0))
    context = multiprocessing.get_context("fork")
    stop, results = context.Event(), context.Queue()
    started = time.monotonic()
    writing = context.Process(target=writer, args=(mode, directory, stop, results))
    writing.start()
    reading = [context.Process(target=reader, args=(mode, directory, opens // readers, results))
               for _ in range(readers)]
    for process in reading:
        process.start()
    summary = {"opens": opens // readers * readers, "ok": 0, "torn": 0}
    for _ in reading:
        for key, value in results.get().items():
            summary[key] = summary.get(key, 0) + value
    stop.set()
    summary.update(results.get())
    for process in reading + [writing]:
        process.join()
    summary["seconds"] = round(time.monotonic() - started, 2)
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
