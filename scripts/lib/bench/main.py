"""scripts/bench: cachefs against the filesystem its store lives on.

The same work runs through the FUSE mount (MOUNT/data/bench) and directly in a
sibling directory of the store (WORK/direct, same filesystem), interleaved:
every workload runs its mount side, then its direct side, and the whole
sequence is repeated --repeat times (one mount/unmount cycle per repetition).
The medians are reported with the ratio mount/direct, always "higher is
better": throughput or ops/s, and direct_s/mount_s for the timed listings.
"""
import datetime
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

from . import measure, options, report
from .core import BenchError, Interrupted, Steps, log, read_lines, warn
from .mounts import Mount, anything_mounted_under, unmount_leftovers
from .results import Results
from .sections import (encryption, engine, hot_path, io, latency, listing, memory, origin, policy_costs, scale,
                       shared_tier,
                       small_files)

REPO_ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
HELPER_SOURCE = os.path.join(REPO_ROOT, "Sources", "BenchFiles", "main.c")
HELPER_PRODUCT = "cachefs-bench-files"


class Bench:
    """What the workloads share: the options, the scratch directory, the binaries,
    the store in use, the step runner and the results."""

    def __init__(self, opts):
        self.opts = opts
        self.repo_root = REPO_ROOT
        self.steps = Steps(opts.step_timeout)
        self.work = None          # scratch dir: store/, mnt/, direct/, bin/, step outputs
        self.direct = None
        self.cachefs = None
        self.files_bin = None
        self.mount = None         # the Mount in use (see use_store)
        self.reference = None     # passthrough_hp's ReferenceMount while --hot-path runs
        self.main_paths = None    # the store and mountpoint of workloads 1-5
        self.extra_opts = ""      # appended to the mount options by --compare-threading
        self.can_drop_caches = False
        self.fuse_trace = False
        self.origin_server = None
        self.scale_count = 0
        first = {"main": "main", "scale": "scale", "origin": "origin"}.get(opts.mode, opts.mode)
        self.results = Results(first)

    # --------------------------------------------------------- stores --
    def use_store(self, store, mnt):
        self.mount = Mount(self, store, mnt)

    def use_main_store(self):
        self.use_store(*self.main_paths)

    def side_dir(self, side):
        """Where that side's files live."""
        return f"{self.mount.mnt}/data/bench" if side == "mount" else self.direct

    def remove(self, *paths):
        if self.steps.run(None, ["rm", "-rf", *paths]) != 0:
            warn(f"could not remove {' '.join(paths)}")

    # ---------------------------------------------------- environment --
    def make_work_dir(self):
        parent = self.opts.work_parent
        if not parent:
            parent = "/var/tmp"
            if not on_real_disk(parent):
                parent = REPO_ROOT
        if not os.path.isdir(parent):
            raise BenchError(f"work parent does not exist: {parent}")
        if not on_real_disk(parent):
            raise BenchError(f"{parent} is on {fs_type(parent)}; use --work on a real disk")
        # canonical, as in /proc/mounts and the daemon's argv
        self.work = os.path.realpath(tempfile.mkdtemp(prefix="cachefs-bench.", dir=parent))
        self.direct = f"{self.work}/direct"    # sibling of the store: same filesystem
        self.main_paths = (f"{self.work}/store", f"{self.work}/mnt")
        os.makedirs(self.direct)
        os.makedirs(f"{self.work}/bin")
        self.use_main_store()

    def resolve_binaries(self):
        """cachefs: CACHEFS_BIN, or built (release) in the repository. The helper:
        CACHEFS_BENCH_FILES, or beside cachefs, or compiled from its source. Both
        are copied into the work dir: a rebuild during the bench (development
        binary) must not change what is measured, or the store format under it."""
        cachefs = os.environ.get("CACHEFS_BIN", "")
        if not cachefs:
            log("==> building cachefs (release)")
            for product in ("cachefs", HELPER_PRODUCT):
                rc = subprocess.run(["swift", "build", "-c", "release", "--product", product], cwd=REPO_ROOT,
                                    stdout=sys.stderr).returncode
                if rc != 0:
                    raise BenchError(f"swift build --product {product} failed")
            cachefs = f"{REPO_ROOT}/.build/release/cachefs"
        # A binary mid-rebuild may be missing for a moment; wait up to a minute.
        deadline = time.monotonic() + 60
        while not os.access(cachefs, os.X_OK):
            if time.monotonic() > deadline:
                raise BenchError(f"cachefs binary not found: {cachefs}")
            time.sleep(1)
        log(f"cachefs bench: {cachefs}")
        self.cachefs = f"{self.work}/bin/cachefs"
        shutil.copy2(cachefs, self.cachefs)

        helper = os.environ.get("CACHEFS_BENCH_FILES", "")
        beside = os.path.join(os.path.dirname(cachefs), HELPER_PRODUCT)
        self.files_bin = f"{self.work}/bin/files"
        if not helper and os.access(beside, os.X_OK):
            helper = beside
        if helper:
            if not os.access(helper, os.X_OK):
                raise BenchError(f"file helper not found: {helper}")
            log(f"file helper: {helper}")
            shutil.copy2(helper, self.files_bin)
        else:
            # Not built beside this cachefs (an installed binary, say): compile it here.
            if not shutil.which("cc"):
                raise BenchError(f"no {HELPER_PRODUCT} beside {cachefs} and no cc to compile {HELPER_SOURCE}")
            log(f"file helper: compiling {HELPER_SOURCE}")
            if subprocess.run(["cc", "-O2", "-Wall", "-o", self.files_bin, HELPER_SOURCE]).returncode != 0:
                raise BenchError(f"compiling {HELPER_SOURCE} failed")

    def check_drop_caches(self):
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            self.can_drop_caches = True
        except OSError:
            warn("cannot write /proc/sys/vm/drop_caches (not root?): cold read skipped")

    # -------------------------------------------------------- cleanup --
    def cleanup(self, status):
        """Always: stop the step, unmount whatever is mounted below the work dir,
        stop the origin server, keep the logs if something failed, remove the
        work dir (unless a mount is stuck in it)."""
        if self.work is None:
            return
        self.steps.kill()
        if self.mount is not None:
            try:
                self.mount.unmount()
            except Exception as error:   # keep cleaning up
                warn(f"unmounting {self.mount.mnt}: {error}")
        if self.reference is not None:
            try:
                self.reference.unmount()     # and stops passthrough_hp, killing it if it must
            except Exception as error:
                warn(f"unmounting {self.reference.mnt}: {error}")
        unmount_leftovers(self.work)
        origin.stop_server(self)
        if status not in (0, 130, 143):
            self.save_logs()
        if anything_mounted_under(self.work):
            warn(f"{self.mount.mnt if self.mount else self.work} is still mounted; leaving {self.work} in place")
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    def save_logs(self):
        """Keeps the logs next to the work dir, which is about to be removed."""
        saved = f"{self.work}.log"
        sources = [f"{self.work}/mount.out", f"{self.work}/fusermount.err"]
        if self.mount is not None:
            sources.append(f"{self.mount.store}/daemon.log")
        lines = []
        with open(saved, "w", encoding="utf-8", errors="replace") as out:
            for source in sources:
                for text in read_lines(source):
                    out.write(text + "\n")
                    lines.append(text)
        log(f"--- last non-info lines of the cachefs logs (all in {saved}) ---")
        keep = [t for t in lines if not re.match(r"^[^ ]+ (trace|debug|info|notice) ", t)]
        for text in keep[-20:]:
            log(text)


def fs_type(path):
    result = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True)
    return result.stdout.strip()


def on_real_disk(path):
    """The point is the real disk: refuse in-memory filesystems."""
    return fs_type(path) not in ("tmpfs", "ramfs")


def ensure_tools():
    if not shutil.which("fio") or not shutil.which("curl"):
        # Fresh Debian CI image: install the tools once, as root.
        if os.geteuid() != 0:
            raise BenchError("fio or curl is missing; install fio fuse3 attr curl")
        log("==> installing fio fuse3 attr curl")
        subprocess.run(["apt-get", "update"], check=True, stdout=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "fio", "fuse3", "attr", "curl"], check=True, stdout=sys.stderr)
    for tool in ("fusermount3", "timeout", "python3", "getfattr", "setfattr"):
        if not shutil.which(tool):
            raise BenchError(f"{tool} is required")


def define_metrics(b):
    o, r = b.opts, b.results
    if o.mode == "threading":
        r.define_section("multi-threaded" + (f" ({o.mount_opts})" if o.mount_opts else ""), "mount", "direct")
        small_files.define(b, "_mt", "multi-threaded")
        r.define_section("single_threaded", "mount", "direct")
        small_files.define(b, "_st", "single_threaded")
    elif o.mode == "scale":
        scale.define(b)
    elif o.mode == "origin":
        origin.define(b)
    elif o.mode == "encryption":
        encryption.define(b)
    elif o.mode == "latency":
        latency.define(b)
    elif o.mode == "hotpath":
        hot_path.define(b)
    elif o.mode == "policycosts":
        policy_costs.define(b)
    elif o.mode == "sharedtier":
        shared_tier.define(b)
    else:
        io.define(b)
        small_files.define(b)
        listing.define(b)
        engine.define(b)
        origin.define(b)
        memory.define(b)
        latency.define(b)


def run_main(b):
    o = b.opts
    log("==> setup (untimed)")
    b.mount.mount()
    io.setup_data(b)
    b.mount.check_alive()
    b.mount.unmount()
    for rep in range(1, o.repeat + 1):
        log(f"==> run {rep}/{o.repeat}")
        b.mount.mount()
        for workload in (io.run_seq_read, io.run_rand_read, io.run_seq_write, small_files.run_small_files,
                         listing.run_listing):
            b.mount.check_alive()
            workload(b)
        b.mount.check_alive()
        b.mount.unmount()
        log(f"==> run {rep}/{o.repeat}: engine")
        engine.run_engine(b)
        log(f"==> run {rep}/{o.repeat}: read-through")
        origin.run_origin(b)
    for n in o.mem_sizes:
        memory.run_memory(b, n)
    if o.mem_sizes:
        for width in memory.NAME_WIDTHS:
            memory.run_memory(b, memory.NAME_ENTRIES, name_bytes=width)
    latency.run_latency(b)


def run_threading(b):
    o = b.opts
    for rep in range(1, o.repeat + 1):
        for extra, suffix in (("", "_mt"), ("single_threaded", "_st")):
            b.extra_opts = extra
            log(f"==> run {rep}/{o.repeat}: {extra or 'multi-threaded'}")
            b.mount.mount()
            b.mount.check_alive()
            small_files.run_small_files(b, suffix)
            b.mount.check_alive()
            b.mount.unmount()
    b.extra_opts = ""


def run_policies(b):
    """Its own table: hit ratios, not ratios against the disk (scripts/lib/policy_bench.py)."""
    cmd = ["python3", f"{REPO_ROOT}/scripts/lib/policy_bench.py", "--cachefs", b.cachefs, "--work", b.work]
    if b.opts.quick:
        cmd.append("--quick")
    json_path = b.opts.json_path or f"{b.work}.json"
    cmd += ["--json", json_path]
    proc = subprocess.Popen(cmd, start_new_session=True)
    b.steps.current = proc     # killed by the cleanup if interrupted
    rc = proc.wait()
    b.steps.current = None
    if rc != 0:
        warn("the policy section failed")
        return 1
    log(f"bench: rows written to {json_path}")
    return 0


def run(b):
    o = b.opts
    ensure_tools()
    if o.mode == "hotpath":
        hot_path.reference_binary(b)   # a wrong path fails before anything is built or made
    b.make_work_dir()         # validates --work before a possibly long build
    b.resolve_binaries()
    b.check_drop_caches()
    b.fuse_trace = measure.check_fuse_trace()
    define_metrics(b)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    log(f"  work {b.work} ({fs_type(b.work)}), {o.repeat} run(s), {'quick' if o.quick else 'full'} sizes, "
        f"mount options: {o.mount_opts or 'none'}, kernel {platform.release()}")

    if o.mode == "policies":
        return run_policies(b)
    if o.mode == "scale":
        scale.run_scale(b)
    elif o.mode == "origin":
        for rep in range(1, o.repeat + 1):
            log(f"==> run {rep}/{o.repeat}: read-through")
            origin.run_origin(b)
    elif o.mode == "threading":
        run_threading(b)
    elif o.mode == "encryption":
        for rep in range(1, o.repeat + 1):
            log(f"==> run {rep}/{o.repeat}: encryption")
            encryption.run_encryption(b)
    elif o.mode == "latency":
        latency.run_latency(b)
    elif o.mode == "hotpath":
        hot_path.run_hot_path(b)
    elif o.mode == "sharedtier":
        shared_tier.run_shared_tier(b)
    elif o.mode == "policycosts":
        policy_costs.run_policy_costs(b)
    else:
        run_main(b)

    report.print_table(b)
    sys.stdout.flush()
    json_path = o.json_path or f"{b.work}.json"
    report.write_json(b, json_path, {
        "started": started,
        "mode": o.mode,
        "quick": o.quick,
        "repeat": o.repeat,
        "mount_options": o.mount_opts,
        "kernel": platform.release(),
        "work_filesystem": fs_type(b.work),
        "fuse_trace": b.fuse_trace,
        "can_drop_caches": b.can_drop_caches,
        "reference": hot_path.reference_binary(b) if o.mode == "hotpath" else None,
    })
    log(f"bench: rows written to {json_path}")
    if b.results.failed:
        warn("some measurements failed")
        return 1
    return 0


def _raise_interrupted(signum, _frame):
    raise Interrupted(signum)


def main(argv):
    try:
        opts = options.parse(argv)
    except options.UsageError as error:
        print(f"bench: error: {error}", file=sys.stderr)
        return 1
    b = Bench(opts)
    # Explicitly: a shell starts background jobs with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_interrupted)
    signal.signal(signal.SIGHUP, _raise_interrupted)
    status = 1
    try:
        status = run(b)
    except BenchError as error:
        print(f"bench: error: {error}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        print(file=sys.stderr)
        status = 130
    except Interrupted as interrupted:
        status = interrupted.status
    except Exception:
        traceback.print_exc()
        status = 1
    finally:
        # The cleanup must run to its end: no second Ctrl-C or TERM cuts it short.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        b.cleanup(status)
    return status
