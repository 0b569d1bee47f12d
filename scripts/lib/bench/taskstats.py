"""A process's CPU time in nanoseconds, its exited threads included, from the kernel's
taskstats (generic netlink family TASKSTATS, TASKSTATS_CMD_GET by thread group id).

Why: cachefs's request threads come and go (several exit and others start during a loop of
10,000 opens), so the sum of the live threads' run time (/proc/PID/task/*/schedstat) loses the
exited ones, and utime + stime (/proc/PID/stat) is in 10 ms ticks: 1 µs per open over 10,000
opens, as much as the differences to be measured. The thread group's cpu_run_virtual_total is
the sum of every thread's sum_exec_runtime (the live ones' and, kept in the group's stats at
their exit, the exited ones'), in nanoseconds. perf stat -p with task-clock, tried first,
missed up to a sixth of it when threads exited. Needs CAP_NET_ADMIN (root) and a kernel with
CONFIG_TASKSTATS; cpu_ns returns None otherwise.
"""
import socket
import struct

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
TASKSTATS_CMD_GET = 1
TASKSTATS_CMD_ATTR_TGID = 2
TASKSTATS_TYPE_STATS = 3
TASKSTATS_TYPE_AGGR_TGID = 5
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
# struct taskstats (linux/taskstats.h): cpu_run_virtual_total follows version, ac_exitcode,
# ac_flag, ac_nice (padded to 16) and six __u64 (cpu_count ... cpu_run_real_total).
RUN_VIRTUAL_OFFSET = 72


def _attributes(data):
    found = {}
    while len(data) >= 4:
        length, kind = struct.unpack_from("HH", data)
        if length < 4:
            break
        found[kind & 0x3fff] = data[4:length]
        data = data[(length + 3) & ~3:]
    return found


def _attribute(kind, value):
    return struct.pack("HH", 4 + len(value), kind) + value + b"\0" * (-len(value) % 4)


class _Socket:
    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        self.sock.bind((0, 0))
        self.seq = 0
        reply = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, _attribute(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0"))
        self.family = struct.unpack_from("H", reply[CTRL_ATTR_FAMILY_ID])[0]

    def request(self, family, command, payload):
        self.seq += 1
        message = struct.pack("BBH", command, 1, 0) + payload
        self.sock.send(struct.pack("IHHII", 16 + len(message), family, NLM_F_REQUEST, self.seq, 0) + message)
        data = self.sock.recv(65536)
        length, kind = struct.unpack_from("IH", data)
        if kind == NLMSG_ERROR:
            raise OSError(-struct.unpack_from("i", data, 16)[0], "taskstats request failed")
        return _attributes(data[20:length])


_socket = None


def cpu_ns(pid):
    """Nanoseconds the thread group PID has run, exited threads included; None when taskstats
    cannot be asked (not root, no CONFIG_TASKSTATS) or the process is gone."""
    global _socket
    try:
        if _socket is None:
            _socket = _Socket()
        reply = _socket.request(_socket.family, TASKSTATS_CMD_GET,
                                _attribute(TASKSTATS_CMD_ATTR_TGID, struct.pack("I", pid)))
        stats = _attributes(reply[TASKSTATS_TYPE_AGGR_TGID])[TASKSTATS_TYPE_STATS]
        return struct.unpack_from("Q", stats, RUN_VIRTUAL_OFFSET)[0]
    except (OSError, KeyError, struct.error):
        return None
