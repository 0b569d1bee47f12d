#!/usr/bin/env python3
"""Runs operation sequences in a directory and prints, for every step, what the call
answered and the lstat fields of every name under the sequence's directory.

The differential tests (Tests/IntegrationTests/Ext4DifferentialTests.swift) run the same
input once on ext4 and once in a cachefs pool and compare the two outputs line by line.

Usage: fs_sequences.py ROOT SEQUENCES.json
  SEQUENCES.json: [{"name": "...", "steps": ["create a", "rename a b", ...]}, ...]
  output: one JSON object per step: {"sequence", "step", "index", "result", "names"}
  where names maps each relative path (and ".") to its fields.
Each sequence runs in ROOT/<number>, created first (not a step). Times are compared as
"moved since the previous step", so the script waits a little before each step: the
kernel's coarse clock must tick between two steps for a move to be visible.
"""

import ctypes
import errno
import hashlib
import json
import os
import socket
import stat
import sys
import time

sys.dont_write_bytecode = True

LIBC = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
FALLOCATE_MODES = {
    "0": 0,
    "keep": 0x01,                   # FALLOC_FL_KEEP_SIZE
    "punch": 0x01 | 0x02,           # FALLOC_FL_PUNCH_HOLE needs KEEP_SIZE
    "zero": 0x10,                   # FALLOC_FL_ZERO_RANGE
    "zero-keep": 0x10 | 0x01,
}
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
STEP_GAP_SECONDS = 0.012


def check(result):
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))


def renameat2(old, new, flags):
    check(LIBC.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(), ctypes.c_uint(flags)))


def fallocate(path, mode, offset, length):
    fd = os.open(path, os.O_WRONLY)
    try:
        check(LIBC.fallocate(fd, ctypes.c_int(FALLOCATE_MODES[mode]),
                             ctypes.c_long(offset), ctypes.c_long(length)))
    finally:
        os.close(fd)


def write(path, text, flags):
    fd = os.open(path, flags if flags & os.O_RDWR else os.O_WRONLY | flags)
    try:
        return os.write(fd, text.encode())
    finally:
        os.close(fd)


def make_socket(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
    finally:
        sock.close()


def time_value(text):
    """'now', 'omit' or seconds since the epoch, for utimensat."""
    if text == "now":
        return (0, UTIME_NOW)
    if text == "omit":
        return (0, UTIME_OMIT)
    return (int(text), 0)


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def utimens(path, atime, mtime, flags=0):
    times = (Timespec * 2)(Timespec(*time_value(atime)), Timespec(*time_value(mtime)))
    check(LIBC.utimensat(AT_FDCWD, path.encode(), times, ctypes.c_int(flags)))


def open_for(path, how):
    flags = {"read": os.O_RDONLY | os.O_NONBLOCK, "write": os.O_WRONLY | os.O_NONBLOCK,
             "creat-excl": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
             "trunc": os.O_WRONLY | os.O_TRUNC}[how]
    os.close(os.open(path, flags, 0o644))


def run_step(words):
    """Runs one step; returns a short description of its value ("ok", a byte count, a
    link target). Raises OSError with the call's errno."""
    op, args = words[0], words[1:]
    if op == "create":
        os.close(os.open(args[0], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    elif op == "write":
        return str(write(args[0], " ".join(args[1:]), os.O_APPEND))
    elif op == "write-rw":
        return str(write(args[0], " ".join(args[1:]), os.O_APPEND | os.O_RDWR))
    elif op == "fill":
        return str(write(args[0], "abcdefgh" * (int(args[1]) // 8), os.O_APPEND))
    elif op == "open":
        open_for(args[0], args[1])
    elif op == "mkdir":
        os.mkdir(args[0], 0o755)
    elif op == "rmdir":
        os.rmdir(args[0])
    elif op == "unlink":
        os.unlink(args[0])
    elif op == "symlink":
        os.symlink(args[0], args[1])
    elif op == "readlink":
        return os.readlink(args[0])
    elif op == "link":
        os.link(args[0], args[1], follow_symlinks=False)
    elif op == "mkfifo":
        os.mkfifo(args[0], 0o644)
    elif op == "mksock":
        make_socket(args[0])
    elif op == "mknod-chr":
        os.mknod(args[0], 0o644 | stat.S_IFCHR, os.makedev(int(args[1]), int(args[2])))
    elif op == "mknod-blk":
        os.mknod(args[0], 0o644 | stat.S_IFBLK, os.makedev(int(args[1]), int(args[2])))
    elif op == "rename":
        os.rename(args[0], args[1])
    elif op == "rename-noreplace":
        renameat2(args[0], args[1], RENAME_NOREPLACE)
    elif op == "rename-exchange":
        renameat2(args[0], args[1], RENAME_EXCHANGE)
    elif op == "chmod":
        os.chmod(args[0], int(args[1], 8), follow_symlinks=True)
    elif op == "chown":
        os.chown(args[0], int(args[1]), int(args[2]), follow_symlinks=False)
    elif op == "truncate":
        os.truncate(args[0], int(args[1]))
    elif op == "utimens":
        utimens(args[0], args[1], args[2])
    elif op == "lutimens":
        utimens(args[0], args[1], args[2], flags=0x100)  # AT_SYMLINK_NOFOLLOW
    elif op == "fallocate":
        fallocate(args[0], args[1], int(args[2]), int(args[3]))
    else:
        raise SystemExit(f"unknown step: {' '.join(words)}")
    return "ok"


KINDS = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink", stat.S_IFIFO: "fifo",
         stat.S_IFSOCK: "socket", stat.S_IFCHR: "chr", stat.S_IFBLK: "blk"}


def content(path):
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))
    return f"{len(data)}:{hashlib.sha1(data).hexdigest()[:12]}"


def link_target(path):
    try:
        return os.readlink(path)
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))


def snapshot():
    """Every name under the current directory (and "." itself) with its lstat fields."""
    found = {".": os.lstat(".")}
    for top, dirs, files in os.walk("."):
        for name in dirs + files:
            path = os.path.join(top, name)[2:]
            try:
                found[path] = os.lstat(path)
            except OSError:
                continue
    names = {}
    by_inode = {}
    for path, info in found.items():
        by_inode.setdefault(info.st_ino, []).append(path)
    for path, info in found.items():
        kind = KINDS.get(stat.S_IFMT(info.st_mode), "other")
        fields = {
            "type": kind,
            "mode": oct(stat.S_IMODE(info.st_mode)),
            "nlink": info.st_nlink,
            "uid": info.st_uid,
            "gid": info.st_gid,
            "size": info.st_size,
            "ctime": info.st_ctime_ns,
            "mtime": info.st_mtime_ns,
            "same_inode_as": sorted(p for p in by_inode[info.st_ino] if p != path),
        }
        if kind == "symlink":
            fields["target"] = link_target(path)
        if kind == "file":
            fields["content"] = content(path)
        if kind in ("chr", "blk"):
            fields["rdev"] = f"{os.major(info.st_rdev)}:{os.minor(info.st_rdev)}"
        names[path] = fields
    return names


def with_moves(names, previous):
    """Replaces raw times with whether they moved since the previous step."""
    result = {}
    for path, fields in names.items():
        fields = dict(fields)
        before = previous.get(path)
        for key in ("ctime", "mtime"):
            value = fields.pop(key)
            fields[key + "_moved"] = "new" if before is None else ("yes" if value != before[key] else "no")
        result[path] = fields
    return result


def run_sequence(number, sequence, root):
    directory = os.path.join(root, str(number))
    os.mkdir(directory, 0o755)
    os.chdir(directory)
    try:
        previous = snapshot()
        for index, step in enumerate(sequence["steps"]):
            time.sleep(STEP_GAP_SECONDS)
            try:
                result = run_step(step.split())
            except OSError as error:
                result = errno.errorcode.get(error.errno, str(error.errno))
            names = snapshot()
            print(json.dumps({"sequence": sequence["name"], "index": index, "step": step,
                              "result": result, "names": with_moves(names, previous)},
                             sort_keys=True), flush=True)
            previous = names
    finally:
        os.chdir(root)


def main():
    root = os.path.realpath(sys.argv[1])
    os.umask(0o022)
    with open(sys.argv[2]) as handle:
        sequences = json.load(handle)
    for number, sequence in enumerate(sequences):
        run_sequence(number, sequence, root)


if __name__ == "__main__":
    main()
