#!/usr/bin/env python3
"""Fills an unmounted, freshly initialised cachefs store with N files in `data`.

    bench-synthetic-store.py STORE N [SIZE [DIR]]

Each file is SIZE bytes of b'x' (default 0: empty). With DIR, the files go into the directory
`data/DIR`, which must exist (made through the mount before the unmount) and be empty; without
it, into `data` itself, which must be empty.

Creating a million files through the mount takes about an hour (1-3 ms per create), so
scripts/bench builds its big stores offline: the store must have been mounted once (with the
`data` pool) and cleanly unmounted, which creates STORE/index.sqlite with its schema. This
inserts N rows into `entry` (files of the `data` pool, in data or data/DIR, named
b'f0'..b'f<N-1>' (padded with b'x' to
SYNTHETIC_NAME_BYTES bytes when that is set in the environment), durable, SIZE bytes, mode 0644, one link, whole 4 KiB blocks) in one
transaction, and creates the matching object files STORE/objects/XX/ID (XX: the id's low byte
in hex), as the daemon would have.
Prints the first and last new ids and the seconds each part took.
"""
import os
import sqlite3
import sys
import time


def main() -> int:
    if len(sys.argv) not in (3, 4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    store, count = sys.argv[1], int(sys.argv[2])
    size = int(sys.argv[3]) if len(sys.argv) >= 4 else 0
    subdir = sys.argv[4].encode() if len(sys.argv) == 5 else None
    content = b"x" * size
    index_path = os.path.join(store, "index.sqlite")
    if not os.path.exists(index_path):
        print(f"{index_path}: missing; mount and unmount the store once first", file=sys.stderr)
        return 1

    db = sqlite3.connect(index_path, isolation_level=None)
    schema = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'entry'").fetchone()
    if schema is None:
        print("no table `entry` in the index", file=sys.stderr)
        return 1
    columns = [row[1] for row in db.execute("PRAGMA table_info(entry)")]
    expected = ["id", "parent", "name", "pool", "kind", "mode", "uid", "gid", "size", "atime", "mtime",
                "ctime", "last_access", "persistent", "pinned_until", "expiration", "writing", "durable",
                "nlink", "blocks", "rdev", "target", "cost_ms"]
    if columns != expected:
        print(f"unexpected columns in entry: {columns}\nschema: {schema[0]}", file=sys.stderr)
        return 1
    row = db.execute("SELECT id FROM entry WHERE parent = 1 AND name = ?", (b"data",)).fetchone()
    if row is None:
        print("no `data` pool row (name b'data', parent 1) in the index", file=sys.stderr)
        return 1
    pool = parent = row[0]
    if subdir is not None:
        row = db.execute("SELECT id FROM entry WHERE parent = ? AND name = ? AND kind = 1",
                         (pool, subdir)).fetchone()
        if row is None:
            print(f"no directory data/{subdir.decode()} in the index", file=sys.stderr)
            return 1
        parent = row[0]
    if db.execute("SELECT count(*) FROM entry WHERE parent = ?", (parent,)).fetchone()[0]:
        print("the directory to fill is not empty", file=sys.stderr)
        return 1
    first = db.execute("SELECT max(id) FROM entry").fetchone()[0] + 1
    seq = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'entry'").fetchone()
    if seq is not None:
        first = max(first, seq[0] + 1)
    stamp = time.time_ns()
    uid, gid = os.getuid(), os.getgid()

    t0 = time.monotonic()
    blocks = (size + 4095) // 4096 * 8
    width = int(os.environ.get("SYNTHETIC_NAME_BYTES", "0"))
    rows = ((first + i, parent, (b"f%d" % i).ljust(width, b"x"), pool, 2, 0o644, uid, gid, size, stamp, stamp, stamp, stamp,
             0, 0, 0, 0, 1, 1, blocks) for i in range(count))
    db.execute("BEGIN")
    db.executemany("INSERT INTO entry(id, parent, name, pool, kind, mode, uid, gid, size, atime, mtime, "
                   "ctime, last_access, persistent, pinned_until, expiration, writing, durable, nlink, blocks) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    # Rows written by hand: the usage saved at the last unmount no longer holds.
    db.execute("DELETE FROM setting WHERE key = 'usage_totals'")
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    t1 = time.monotonic()

    objects = os.path.join(store, "objects")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    dirs = [os.open(os.path.join(objects, "%02x" % low), os.O_RDONLY | os.O_DIRECTORY) for low in range(256)]
    for entry_id in range(first, first + count):
        fd = os.open(str(entry_id), flags, 0o600, dir_fd=dirs[entry_id & 0xFF])
        if content:
            os.write(fd, content)
        os.close(fd)
    for fd in dirs:
        os.close(fd)
    os.sync()
    t2 = time.monotonic()
    print(f"ids {first}..{first + count - 1} in directory {parent} of pool {pool}: index {t1 - t0:.1f} s, objects {t2 - t1:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
