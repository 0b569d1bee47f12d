"""Command line and sizes of scripts/bench."""
import os
import re
import sys
from dataclasses import dataclass, field

USAGE = """\
Usage: scripts/bench [--quick] [--repeat N] [--work DIR] [--mount-options OPTS]
                     [--json FILE] [--reference PATH]
                     [--compare-threading | --scale | --origin | --policies |
                      --encryption | --eviction-latency | --hot-path |
                      --policy-costs | --shared-tier]

Measures cachefs (through its FUSE mount) against the store's own filesystem
and prints a table: workload | mount | direct | ratio | target | status, and
writes every row to a JSON file (see --json).

Workloads (default sizes; --quick sizes in brackets):
  1. sequential 1 MiB reads of a 1 GiB [64 MiB] file, dropped cache and warm
  2. random 4 KiB reads of that file, warm, time-based 5 s [2 s]
  3. sequential 1 MiB writes of 512 MiB [64 MiB], without and with end fsync:
     with fio, which opens the file read-write, and with dd, which opens it
     write-only as cp, tar, curl -o and a shell's > do (through the mount such a
     handle bypasses the kernel's page cache, see docs/design-choices.md)
  4. name operations on 10,000 [1,000] names, in a fresh directory per side:
     - create + 1 KiB write + close
     - stat right after (the kernel has the names and, through FUSE, asks the
       daemon for the attributes the writes changed), then stat again (repeat)
     - settle: wait for the daemon's background sync of closed files
       (sync_interval + 1 s) and `sync`, on both sides, so that what follows
       acts on files whose bytes are on disk, as files made a while ago are
       (unlinking unsynced files on ext4 only drops page cache)
     - rename each file to a new name in the same directory
     - cold stat: `sync; echo 2 > /proc/sys/vm/drop_caches` drops the kernel's
       dentries and inodes on both sides (the page cache stays: neither side
       waits for the disk); through FUSE every stat is then a LOOKUP to the
       daemon, ext4 looks the name up in its directory blocks. The LOOKUPs are
       counted (see below) and fewer than 90% of the names fails the run.
     - unlink: the calls, on both sides; "until bytes gone": on the mount side
       until the store holds none of the files' bytes (the daemon removes
       them after its group commit, off the request); on ext4 unlink(2) has
       freed the inode when it returns, so the direct figure is the same run
     - mkdir of as many directories, settle, rmdir of them
     The daemon's CPU per operation (its threads' run time from
     /proc/PID/task/*/schedstat, or utime + stime from /proc/PID/stat if a
     thread exited meanwhile) is printed in a section of its own.
  5. `ls -l` and `find` of a directory of 100,000 [5,000] files
Engine workloads (cachefs against a baseline, or absolute figures):
  6. eviction: 100,000 [10,000] 1 KiB files in `data`, then max_size lowered to
     1 MiB; files evicted per second against `find -delete` of as many files
     created directly on the store's filesystem
  7. hot read while evicting: a store of its own holds many 1 KiB files in
     `data` (built offline; at least 200,000 [50,000], more if the evict rate of
     row 6 needs them to outlast the reads) and a 256 MiB file in pool `hot`
     (max_size 0), read warm 5 [3] times for 2 s while idle; then data's
     max_size goes to 1 MiB and the same reads run while the evictor removes
     the files. A read counts only if data still held more than 1 MiB worth of
     files when it ended (checked with user.cache.files before and after
     it), i.e. the evictor ran through the whole read. Ratio: busy / idle.
  9. read-through (--origin runs only these): a pool whose origin is an HTTP
     server on loopback (nginx over a folder of the store's disk), against
     curl of the same URLs: first read of a 256 MiB file (MiB/s) against curl
     -o /dev/null and again against curl -o FILE on the store's disk, time to
     first byte of a 1 GiB file (head -c 1, absolute, the lookup's request
     included), 1,000 [200] files of 16 KiB read by 8 parallel readers
     (files/s) and their second read (cached) against reading the origin
     folder's files directly, the same hits with revalidate=0; in blocks: the
     first MiB of a 4 GiB file against curl -r 0-1048575, and a 2 GiB file
     through a 256 MiB pool against curl
  10. eviction policies (--policies runs only this; not in the default run, it
     takes about 30 minutes [8 with --quick]): traces with a fixed seed (Zipf
     0.6, 0.8, 1.0; Zipf 0.9 with a one-time scan; a loop 1.1x the 10 % pool;
     popularity that shifts halfway) over 10,000 [2,000] names, 100,000
     [20,000] reads of 4 KiB files, replayed through a mount at pools of 1, 5,
     10 and 25 % of the names under lru, s3fifo, sieve, tinylfu and auto; each
     hit ratio beside `cachefs replay`'s simulation, libCacheSim's reference
     implementations (pip-installed into the work dir when PyPI answers) and
     Belady's optimum; the what-if curve's largest error against replays at
     its sizes; requests/s and the daemon's CPU per request. Then traces of
     mixed sizes by `cachefs replay` alone (lognormal sizes with and without
     a one-time scan of large files; Pareto sizes, the small files the
     popular ones) at 1, 5, 10 and 25 % of the working set's bytes, for each
     goal: every policy's and auto's measure of it beside the upper bound
     and libCacheSim's LRU, S3-FIFO, SIEVE, W-TinyLFU, LHD and GDSF (a
     Python with libcachesim: LIBCACHESIM_PYTHON, else pip-installed; the
     table says when it is not available). Tables of their own (hit ratios,
     not ratios against the disk).
  11. encryption at rest (--encryption runs only this): an encrypted store
     (cachefs keygen, --encrypt) and a plaintext one, both mounted, the same
     work on each in turn: sequential 1 MiB reads of a 1 GiB [64 MiB] file
     from dropped caches and warm, random 4 KiB reads of a quarter of its
     blocks (each once) from dropped caches, sequential writes with and
     without fsync, creates of 10,000 [1,000] 1 KiB files and their cold
     stat. Ratios are encrypted / plaintext. Also each daemon's CPU per MiB
     read (uncached) and written, whether AES instructions are used (the
     CPU's aes flag; BoringSSL's hardware functions in a perf profile of
     `cachefs cipher-speed`), and that command's CPU per MiB sealed and
     opened at 4, 16 and 64 KiB blocks.
  8. daemon memory (VmRSS) after mount and after listing a directory of
     100,000 entries, and of 1,000,000 entries [skipped]: mount time, RSS
     once it stops falling (6 to 30 s after the listing), bytes per entry,
     the peak (VmHWM) over that RSS, then `cachefs verify` of the store. These stores are built offline
     (scripts/lib/bench-synthetic-store.py) and measured once per bench.
  12. daemon latency while evicting (--eviction-latency runs only this;
     measured once): a store of its own built offline (as in 8) with 60,000 [20,000]
     files of 1 KiB in data/bulk and one of 1 KiB in pool hot (hot/probe),
     mounted again so that data/bulk is not loaded; data's eviction is set to
     s3fifo and its low_watermark to 100. A reader process
     (scripts/lib/getxattr_loop.py) reads hot/probe's user.cache.state in a
     loop, timing each call: 5 [2] s idle, then data's max_size drops to the
     size of 20 % of the files and the window runs until user.cache.files
     shows that many (an eviction pass of 80 %). p50, p99 and max of the
     calls started within each window, evicting beside idle (target: max
     under 10 ms); then all of it again, on a fresh store, with a busy loop
     per core running through both windows (killed afterwards).
  13. the hot path against libfuse's passthrough_hp (--hot-path runs only
     this; not in the default run; medians of 5 runs unless --repeat says
     otherwise): passthrough_hp (--reference PATH or PASSTHROUGH_HP; built
     from libfuse's example/passthrough_hp.cc by you, the bench never builds
     it; without it its column reads "not given") mounted with its defaults
     (and --foreground) over a directory of the store's disk, cachefs with a
     plaintext store, cachefs with an encrypted store, and a directory on the
     disk, each run in a directory of its own. First every run's create +
     1 KiB write + close of 10,000 [1,000] files, side after side
     (passthrough_hp and cachefs first in turn), each run followed by a
     settle (cachefs's background sync, sync, every daemon idle) and echo 2 >
     drop_caches (passthrough_hp holds a descriptor per inode the kernel
     knows); no unlink comes before them (ext4 without a journal makes a
     create skip the inodes freed in the last minute). Then, run by run, on
     each side two untimed reads of every file and the timed open + read
     1 KiB + close of each (a warm hit: only the open and close reach a
     daemon), then the unlinks (cachefs: its CPU until the store holds none
     of their bytes). Files/s, each daemon's CPU per op (from when the
     daemon is idle before the loop until it is idle after it) and, with
     perf, FUSE requests per op: cachefs against passthrough_hp (targets:
     hits 10x its rate at a tenth of its CPU, plaintext and encrypted
     stores; creates its rate and at most its CPU, unlinks at most its CPU),
     cachefs with kernel_hits=off, passthrough_hp --nosplice and floorfs
     (the floor of a FUSE hit) beside them, every FUSE side against the
     disk; also a create's deferred CPU (until the settle's end) and a
     hit's (the fold of its access time into its row, forced by a purge).
  14. what each eviction policy costs beside lru (--policy-costs runs only
     this; two to five minutes here): (a) a store of its own, pool data with
     max_size 1G (nothing is evicted), 10,000 files of 1 KiB created in
     data/costs; run after run, for lru, s3fifo, sieve, tinylfu, gdsf and
     auto in turn (each run starting one policy further on): the policy set
     (user.cache.eviction; eviction_active shows it, the daemon idle), two
     untimed reads of every file, then the timed open + read 1 KiB + close
     of each; the daemon's CPU per open (all its threads, those that exit
     included, from taskstats; needs root, else /proc) from before the loop
     until it is idle after the access-time flush that follows it (the
     reads' access times are written to the index every 2 s; the warm-ups'
     flush comes before the window). Each policy's difference to lru's is
     taken run by run (target: at most 2 µs). (b) a store built offline (as
     in 8) with 100,000 [20,000] files of 1 KiB in data, max_size 1G; run
     after run, one mount per policy: the policy set and built, `ls -f` of
     data, the daemon idle, VmRSS; (RSS - that run's lru RSS) / files,
     and the spread of lru's RSS over the runs per file (the noise of one
     figure); beside them the exact figure, user.cache.policy_memory_bytes
     / files (the policy's arrays' capacities), and that beyond lru's (0:
     its order is the index's) and beyond an lru built in memory (`cachefs
     policy-memory`); the target (at most 48 bytes) is judged on the exact
     rows. Medians of 3 runs unless --repeat says otherwise.
  15. a shared tier (--shared-tier runs only this; about a minute a run): a
     redis-server on loopback started by the bench, two mounts (A, B) standing
     for two machines, pools thumbnails (no origin) and avatars (an exec:
     origin that sleeps 50 ms a file), both sharing the server. (a) 1,000 x
     16 KiB written on A, sent by its write-behind, read on B with 8 readers
     (every read a shared hit), against the same 1,000 values fetched by a
     raw RESP client pipelined on one connection (target 0.8x). (b) 1,000
     files of the slow origin read on A, then B's cold read of them against a
     third mount without the tier (target 10x); B must not run the program.
     (c) redis-server killed (SIGKILL) when half of A's reads of 1,000 other
     origin files have asked it, while A writes 1,000 files: failed reads plus
     lost writes (target 0), and the shared_errors counted.

Options:
  --quick               Small sizes, for smoke runs.
  --repeat N            Repetitions; medians are reported (default 3; 5 with
                        --hot-path).
  --work DIR            Parent of the scratch directory; must be a real disk,
                        not tmpfs. Default: /var/tmp (or the repository's
                        filesystem if /var/tmp is tmpfs). A fresh
                        cachefs-bench.XXXXXX subdirectory is used and removed.
  --mount-options OPTS  Passed to `cachefs mount` as -o min_free=0,OPTS
                        (e.g. single_threaded or threads=4).
  --json FILE           Where to write the rows as JSON (every run's values,
                        medians, ratio, target, status). Default: beside the
                        scratch directory, DIR/cachefs-bench.XXXXXX.json.
                        With --policies: its own rows (policy_bench.py --json).
  --compare-threading   Only workload 4, each run mounting twice: with the
                        default threads (and OPTS), then with single_threaded;
                        both sets of rows are printed.
  --eviction-latency    Only workload 12.
  --policy-costs        Only workload 14.
  --shared-tier         Only workload 15.
  --hot-path            Only workload 13 (two to three minutes here; needs
                        root: it drops the kernel's dentries between runs).
  --reference PATH      The passthrough_hp binary of workload 13 (overrides
                        PASSTHROUGH_HP).
  --scale               Only the flatness of one directory: a store of its own
                        and a directory on the disk grow side by side with
                        empty files; at 10,000 files, 5,000 [2,000] creates
                        and then (dentries dropped) 5,000 [2,000] cold stats of
                        names spread over the directory are timed; the
                        directories grow to 1,000,000 [100,000] files and the
                        same is timed again. Files/s and daemon CPU per op at
                        both ends; measured once. Growing through FUSE takes
                        minutes (about 4 minutes per million files here) and
                        stops after SCALE_BUDGET seconds; the rows then say
                        how far it got.
  -h, --help            Show this help.

Environment:
  CACHEFS_BIN   cachefs binary to use. If unset, the bench runs
                `swift build -c release --product cachefs` and
                `--product cachefs-bench-files` in the repository root and
                uses .build/release/cachefs.
  CACHEFS_BENCH_FILES
                The per-file loop helper (product cachefs-bench-files,
                Sources/BenchFiles/main.c). If unset: cachefs-bench-files
                beside the cachefs binary, else compiled with cc from
                Sources/BenchFiles/main.c into the scratch directory.
  PASSTHROUGH_HP
                libfuse's passthrough_hp binary for --hot-path, e.g. built
                from tag fuse-3.14.0: g++ -O2 -std=c++17 passthrough_hp.cc
                $(pkg-config --cflags --libs fuse3) -lpthread (with
                example/cxxopts.hpp beside it). Unset: "not given".
  STEP_TIMEOUT  Seconds before one measured command is killed (default 900).
  SCALE_BUDGET  Seconds --scale may spend growing its directories (default 1800).

FUSE requests: when perf and the kernel's fuse tracepoints are available
(fuse:fuse_request_send; perf mounts tracefs if needed), each name-operation row of the mount side
runs under `perf stat -a -e fuse:fuse_request_send` filtered on this mount's
connection and prints the requests (and LOOKUPs) per operation; the tracepoint
costs well under a microsecond per request. Without them the cold stat is
checked by the daemon's CPU only.
The cold read and the cold stat drop caches and need root; otherwise they are
skipped. Every mount uses min_free=0, so the disk's free space never triggers
eviction. Exit status: 0 if every measurement completed (targets are
informational), 1 if a measurement failed, 130/143 if interrupted.
"""


class UsageError(Exception):
    pass


@dataclass
class Options:
    quick: bool = False
    repeat: int = 3
    work_parent: str = ""
    mount_opts: str = ""
    json_path: str = ""
    mode: str = "main"   # main, scale, threading, origin, policies, encryption, latency, hotpath, policycosts or sharedtier
    reference: str = ""  # --reference: passthrough_hp for --hot-path
    scale_budget: int = 1800
    step_timeout: int = 900
    # Sizes (set by finish()).
    seq_mib: int = 0
    write_mib: int = 0
    nfiles: int = 0
    nls: int = 0
    rand_seconds: int = 0
    nevict: int = 0
    hot_reads: int = 0
    nhot: int = 0
    mem_sizes: list = field(default_factory=list)
    hot_mib: int = 256
    origin_big_mib: int = 256
    origin_huge_mib: int = 1024
    origin_small: int = 0
    scale_low: int = 0
    scale_high: int = 0
    scale_batch: int = 0
    nlat: int = 0          # files of the latency rows' store
    lat_idle: int = 0      # seconds of their idle window
    ncost: int = 10000     # files of --policy-costs' CPU store
    nmem: int = 0          # files of its memory store
    sync_wait: int = 3


def _env_int(name, default):
    value = os.environ.get(name, "")
    if not value:
        return default
    if not re.fullmatch(r"[0-9]+", value):
        raise UsageError(f"{name} must be a number of seconds")
    return int(value)


def parse(argv):
    """Options from argv; prints the help and exits on -h; UsageError otherwise."""
    o = Options()
    args = list(argv)

    def value(option, pattern, message):
        if not args or not re.fullmatch(pattern, args[0]):
            raise UsageError(message)
        return args.pop(0)

    repeat_given = False
    while args:
        arg = args.pop(0)
        if arg == "--quick":
            o.quick = True
        elif arg == "--repeat":
            o.repeat = int(value(arg, r"[1-9][0-9]*", "--repeat needs a positive integer"))
            repeat_given = True
        elif arg == "--work":
            o.work_parent = value(arg, r".+", "--work needs a directory")
        elif arg == "--mount-options":
            o.mount_opts = value(arg, r".+", "--mount-options needs a value")
        elif arg == "--json":
            o.json_path = os.path.abspath(value(arg, r".+", "--json needs a file name"))
        elif arg == "--scale":
            o.mode = "scale"
        elif arg == "--compare-threading":
            o.mode = "threading"
        elif arg == "--origin":
            o.mode = "origin"
        elif arg == "--policies":
            o.mode = "policies"
        elif arg == "--encryption":
            o.mode = "encryption"
        elif arg == "--eviction-latency":
            o.mode = "latency"
        elif arg == "--hot-path":
            o.mode = "hotpath"
        elif arg == "--policy-costs":
            o.mode = "policycosts"
        elif arg == "--shared-tier":
            o.mode = "sharedtier"
        elif arg == "--reference":
            o.reference = value(arg, r".+", "--reference needs the path of a passthrough_hp binary")
        elif arg in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        else:
            sys.stderr.write(USAGE)
            raise UsageError(f"unknown argument: {arg}")

    o.scale_budget = _env_int("SCALE_BUDGET", 1800)
    o.step_timeout = _env_int("STEP_TIMEOUT", 900)
    if o.quick:
        o.seq_mib, o.write_mib, o.nfiles, o.nls, o.rand_seconds = 64, 64, 1000, 5000, 2
        o.nevict, o.hot_reads, o.nhot, o.mem_sizes = 10000, 3, 50000, [100000]
        o.origin_small = 200
        o.scale_low, o.scale_high, o.scale_batch = 10000, 100000, 2000
        o.nlat, o.lat_idle = 20000, 2
        o.nmem = 20000
    else:
        o.seq_mib, o.write_mib, o.nfiles, o.nls, o.rand_seconds = 1024, 512, 10000, 100000, 5
        o.nevict, o.hot_reads, o.nhot, o.mem_sizes = 100000, 5, 200000, [100000, 1000000]
        o.origin_small = 1000
        o.scale_low, o.scale_high, o.scale_batch = 10000, 1000000, 5000
        o.nlat, o.lat_idle = 60000, 5
        o.nmem = 100000
    # settle() waits for the daemon's background sync of closed files.
    interval = 2
    match = re.search(r",sync_interval=([0-9]+),", f",{o.mount_opts},")
    if match:
        interval = int(match.group(1))
    o.sync_wait = interval + 1
    if o.mode in ("scale", "latency"):
        o.repeat = 1   # measured once
    if o.mode == "hotpath" and not repeat_given:
        o.repeat = 5   # creates are noisy here: medians of at least five interleaved runs
    if o.mode == "threading" and "single_threaded" in o.mount_opts.split(","):
        raise UsageError("--compare-threading adds single_threaded itself; leave it out of --mount-options")
    return o
