#!/usr/bin/env python3
"""A burst of link, symlink and rename in one pool, and the link-count check after it.

Usage:
  link_workload.py burst DIR SECONDS SEED
      Runs random creates, hard links, symlinks, renames (also onto existing names),
      unlinks and directory moves in DIR/d0..d3 for SECONDS, and prints one JSON object:
      calls made per operation and the errnos they met. Errnos a race between several
      bursts explains (ENOENT, EEXIST, ENOTEMPTY, EISDIR, ENOTDIR, EINVAL) are counted as
      "raced"; ENOTCONN and ECONNABORTED (the daemon is gone) end the burst; any other is
      listed under "unexpected".
  link_workload.py check POOL
      Walks POOL without following symlinks and prints one JSON object: every regular
      file whose st_nlink differs from the names found for its inode, every directory
      whose st_nlink is not 2 + its subdirectories, and the sum of the sizes of the
      distinct regular inodes ("bytes").
"""

import errno
import json
import os
import random
import stat
import sys
import time

sys.dont_write_bytecode = True

RACED = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR, errno.EINVAL}
GONE = {errno.ENOTCONN, errno.ECONNABORTED}
DIRECTORIES = ["d0", "d1", "d2", "d3"]


def random_entry(rng, base):
    directory = os.path.join(base, rng.choice(DIRECTORIES))
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    return os.path.join(directory, rng.choice(names)) if names else None


def new_name(rng, base, tag):
    return os.path.join(base, rng.choice(DIRECTORIES), f"{tag}{rng.randrange(400)}")


def create(rng, base, tag):
    path = new_name(rng, base, tag + "f")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, os.urandom(rng.randrange(1, 20_000)))
    finally:
        os.close(fd)


def is_directory(path):
    return stat.S_ISDIR(os.lstat(path).st_mode)


def link(rng, base, tag):
    source = random_entry(rng, base)
    if source and not is_directory(source):
        os.link(source, new_name(rng, base, tag + "l"), follow_symlinks=False)


def symlink(rng, base, tag):
    source = random_entry(rng, base)
    if source:
        target = os.path.relpath(source, base) if rng.random() < 0.5 else source
        os.symlink(target, new_name(rng, base, tag + "s"))


def rename(rng, base, tag):
    source = random_entry(rng, base)
    if source:
        # Half of the renames land on a name that may exist: replacing is what is tested.
        target = random_entry(rng, base) if rng.random() < 0.5 else None
        os.rename(source, target or new_name(rng, base, tag + "r"))


def unlink(rng, base, tag):
    source = random_entry(rng, base)
    if source and not is_directory(source):
        os.unlink(source)


def move_directory(rng, base, tag):
    directory = os.path.join(base, rng.choice(DIRECTORIES), f"{tag}dir")
    if os.path.isdir(directory):
        os.rename(directory, os.path.join(base, rng.choice(DIRECTORIES), f"{tag}dir"))
    else:
        os.mkdir(directory)


OPERATIONS = [(create, 4), (link, 4), (symlink, 2), (rename, 4), (unlink, 2), (move_directory, 1)]


def burst(base, seconds, seed):
    rng = random.Random(seed)
    tag = f"p{seed}-"
    for directory in DIRECTORIES:
        os.makedirs(os.path.join(base, directory), exist_ok=True)
    choices = [operation for operation, weight in OPERATIONS for _ in range(weight)]
    calls, raced, unexpected = {}, {}, {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        operation = rng.choice(choices)
        name = operation.__name__
        calls[name] = calls.get(name, 0) + 1
        try:
            operation(rng, base, tag)
        except OSError as error:
            if error.errno in GONE:
                break
            code = f"{name} {errno.errorcode.get(error.errno, error.errno)}"
            bucket = raced if error.errno in RACED else unexpected
            bucket[code] = bucket.get(code, 0) + 1
    print(json.dumps({"calls": calls, "raced": raced, "unexpected": unexpected}, sort_keys=True))


def check_tree(pool):
    """The link counts and sizes found by walking pool (see the module's help)."""
    names_by_inode, nlink_by_inode, size_by_inode = {}, {}, {}
    directories = []
    def unreadable(error):  # os.walk skips a directory it cannot list unless told otherwise
        raise error

    for top, dirs, files in os.walk(pool, onerror=unreadable):
        subdirectories = sum(1 for name in dirs if stat.S_ISDIR(os.lstat(os.path.join(top, name)).st_mode))
        directories.append((top, os.lstat(top).st_nlink, 2 + subdirectories))
        for name in files:
            info = os.lstat(os.path.join(top, name))
            if stat.S_ISREG(info.st_mode):
                names_by_inode.setdefault(info.st_ino, []).append(os.path.join(top, name))
                nlink_by_inode[info.st_ino] = info.st_nlink
                size_by_inode[info.st_ino] = info.st_size
    links = [{"names": names, "nlink": nlink_by_inode[inode]}
             for inode, names in names_by_inode.items() if len(names) != nlink_by_inode[inode]]
    dirs = [{"dir": top, "nlink": nlink, "expected": expected}
            for top, nlink, expected in directories if nlink != expected]
    return {"files": len(size_by_inode), "names": sum(map(len, names_by_inode.values())),
            "bytes": sum(size_by_inode.values()), "wrong_file_links": links, "wrong_dir_links": dirs}


def main():
    if sys.argv[1] == "burst":
        burst(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "check":
        print(json.dumps(check_tree(sys.argv[2]), sort_keys=True))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
