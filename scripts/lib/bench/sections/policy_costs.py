"""--policy-costs: what each replacement policy costs beside lru (issue 29): the daemon's CPU per
open of a cached file, and its memory per resident file. lru keeps no state in memory (its
order is the index's last_access); the others keep queues, counters or a heap per cached file
once the pool has a size limit (see PoolReplacement).

1. CPU per open: a store of its own whose pool data has max_size 1G (nothing is evicted) holds
   NCOST files of 1 KiB in data/costs, created through the mount (the helper's names), then
   settled. Run after run, policy after policy (each run starts one policy further on): the
   policy is set (user.cache.eviction; the evictor builds it from the index), then, once
   user.cache.eviction_active shows it and the daemon is idle, `cachefs-bench-files read` of
   every file twice untimed, then timed. The timed window runs from just before the loop until
   the daemon is idle after the evictor's next access-time flush (the daemon appends the reads'
   access times to the index's access log every 2 s, Tunables.accessFlushSeconds, on a 1 s tick; seen as
   the first write to the index's WAL more than 0.1 s after the loop, see wait_for_flush), and
   the window starts only after the flush of the warm-ups' reads: each window holds its own
   reads' flush, for every policy alike. Daemon CPU per open: the run time of all its threads,
   the ones that exited within the window included, from taskstats (see ../taskstats.py: the
   daemon's request threads come and go, which sends measure.cpu_per_op to 10 ms ticks, 1 µs
   per open here); without taskstats (not root), measure.cpu_per_op. Each run's difference to
   lru's is taken within the run; the rows are medians.

2. Memory per resident file: a store built offline (bench-synthetic-store.py) with NMEM files of
   1 KiB in data, max_size 1G. Run after run (each starting one policy further on), per policy
   a fresh mount (the store's eviction is lru at every mount: it is set back before each
   unmount), then the policy set, its build waited for (eviction_active shows it and the daemon
   is idle), then `ls -f` of data (every entry loaded the same way for every policy), the
   daemon idle again, then VmRSS. Per file beyond lru: (RSS_policy - RSS_lru) / NMEM with the
   same run's lru, medians over the runs. Two daemons doing the same differ by megabytes (malloc's
   arenas, which threads did the loading), so the spread of lru's RSS over the runs, per file,
   is a row of its own: the noise of one figure. Logged, not a row: within each daemon, its RSS
   after the policy's build less its RSS just before the policy was set (the mount's, idle),
   per file; that includes the index read's page cache and what the build freed and malloc kept
   (the listing reuses it), so it overstates the policy.

   The exact figure beside it: after the listing, user.cache.policy_memory_bytes (the running
   policy's memoryBytes: its arrays' capacities times their strides, the build's reserve of an
   eighth included) / NMEM, per policy and run. lru's is 0 (its order is the index's), so
   "beyond lru" is the policy's whole figure; "beyond an in-memory lru" subtracts what lru's
   own structure would hold for the same residents (`cachefs policy-memory`, which builds each
   policy as a pool's build does and whose figures the daemon's are logged against). The
   target (at most 48 bytes per file beyond lru) is judged on these exact rows; the RSS rows
   stay, with no target, for what the whole daemon does.
"""
import os
import time

from .. import measure, taskstats
from ..core import FAIL, BenchError, count_tag, elapsed, log, now, read_lines, warn

POLICIES = ("lru", "s3fifo", "sieve", "tinylfu", "gdsf", "auto")
FILE_SIZE = 1024
MAX_SIZE = "1G"              # 10,000 or 100,000 files of 1 KiB (4 KiB blocks): far below it
POOLS = ["--pool", f"data={MAX_SIZE}"]
CPU_TARGET = "2"            # µs per open beyond lru's
MEMORY_TARGET = "48"        # bytes per resident file beyond lru's
ACCESS_FLUSH_WAIT = 3.0     # Tunables.accessFlushSeconds (2) + the evictor's tick (1): the longest wait
FLUSH_GUARD = 0.1           # a write to the index's WAL this long after a loop is the evictor's, not an open's


def define(b):
    o, r = b.opts, b.results
    n, m = o.ncost, o.nmem
    r.define_section(f"daemon CPU per open, {count_tag(n)} hits", "policy", "lru")
    for policy in POLICIES:
        if policy == "lru":
            r.define("pc_cpu_lru", "lru: CPU per open+read 1K+close", "µs", "abs")
            continue
        r.define(f"pc_cpu_{policy}", f"{policy}: CPU per open", "µs", "abs")
        r.define(f"pc_cpu_diff_{policy}", f"  {policy}: CPU per open beyond lru", "µs", "atmost", CPU_TARGET)
    r.define_section(f"daemon memory, {count_tag(m)} resident files", "policy", "lru")
    r.define("pc_rss_lru", f"lru: RSS after ls -f of {count_tag(m)}", "MiB", "abs")
    for policy in POLICIES[1:]:
        r.define(f"pc_rss_{policy}", f"{policy}: RSS after ls -f", "MiB", "abs")
        r.define(f"pc_mem_{policy}", f"  {policy}: beyond lru (RSS)", "B", "abs")
    r.define("pc_mem_spread", "lru: its RSS's spread over runs", "B", "abs")
    r.define_section(f"policy memory per file, exact, {count_tag(m)}", "policy", "lru")
    r.define("pc_exact_lru", "lru: per file (order in the index)", "B/file", "abs")
    r.define("pc_exact_lru_memory", "lru built in memory: per file", "B/file", "abs")
    for policy in POLICIES[1:]:
        r.define(f"pc_exact_{policy}", f"{policy}: per file", "B/file", "abs")
        r.define(f"pc_exact_diff_{policy}", f"  {policy}: beyond lru", "B/file", "atmost", MEMORY_TARGET)
        r.define(f"pc_exact_memory_{policy}", f"  {policy}: beyond an in-memory lru", "B/file", "atmost",
                 MEMORY_TARGET)


def run_policy_costs(b):
    run_cpu(b)
    run_memory(b)


# ---------------------------------------------------------------- helpers --
def set_policy(b, pool, policy):
    """Sets the pool's eviction and waits until eviction_active shows it (auto: any policy,
    with eviction reading auto) and the daemon is idle (the policy built from the index).
    Returns what eviction_active reads."""
    try:
        os.setxattr(pool, "user.cache.eviction", policy.encode())
    except OSError as error:
        raise BenchError(f"setfattr user.cache.eviction={policy} on {pool}: {error}")
    deadline = now() + 30
    while True:
        active = (measure.cache_attr(pool, "eviction_active") or "").strip()
        chosen = (measure.cache_attr(pool, "eviction") or "").strip()
        if chosen == policy and (active == policy or (policy == "auto" and active in POLICIES)):
            break
        if now() >= deadline:
            raise BenchError(f"{pool}: eviction reads {chosen!r} and eviction_active {active!r} 30 s after "
                             f"setting {policy}")
        time.sleep(0.05)
    measure.wait_daemon_idle(b)
    return active


def files_in(pool):
    try:
        return int(os.getxattr(pool, "user.cache.files"))
    except (OSError, ValueError):
        return None


def rss_kib(pid):
    """VmRSS of the process in KiB (the precision /proc gives), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def end_part(b):
    """Unmounts and removes a part's own store, and goes back to the bench's main one."""
    b.mount.unmount()
    b.remove(b.mount.store, b.mount.mnt)
    b.use_main_store()


def runs_measured(r, prefix, per_run):
    """Whether any run of a part measured something; if none did, every policy's PREFIX row
    records a failure."""
    if per_run:
        return True
    for policy in POLICIES:
        r.record(f"{prefix}_{policy}", "mount", FAIL)
    return False


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


# -------------------------------------------------------------------- CPU --
def run_cpu(b):
    o, r = b.opts, b.results
    n = o.ncost
    log(f"==> policy costs: daemon CPU per open of {n} cached 1 KiB files, {o.repeat} run(s) per policy")
    b.use_store(f"{b.work}/costs-store", f"{b.work}/costs-mnt")
    per_run = []    # {policy: µs} per run
    try:
        b.mount.mount(POOLS)
        b.mount.check_alive()
        pool = f"{b.mount.mnt}/data"
        directory = f"{pool}/costs"
        os.mkdir(directory)
        result = measure.files(b, "create", directory, n, FILE_SIZE)
        if result.value == FAIL:
            raise BenchError(f"creating {n} files in {directory} failed")
        log(f"    created {n} files of {FILE_SIZE} B ({result.value} files/s); settling")
        time.sleep(o.sync_wait)     # the daemon's background sync of the closed files
        os.sync()
        measure.wait_daemon_idle(b)
        if files_in(pool) != n:
            raise BenchError(f"data holds {files_in(pool)} files, expected {n}")
        for rep in range(1, o.repeat + 1):
            shift = (rep - 1) % len(POLICIES)
            order = POLICIES[shift:] + POLICIES[:shift]
            log(f"==> policy costs: CPU per open, run {rep}/{o.repeat} ({', '.join(order)})")
            figures = {}
            for policy in order:
                figures[policy] = timed_reads(b, pool, directory, policy)
            per_run.append(figures)
            if files_in(pool) != n:
                raise BenchError(f"data holds {files_in(pool)} files after run {rep}, expected {n}: "
                                 f"something was evicted")
    except (BenchError, OSError) as error:
        warn(f"policy costs, CPU per open: {error}")
        r.failed = True
    finally:
        end_part(b)
    if not runs_measured(r, "pc_cpu", per_run):
        return
    for figures in per_run:
        lru = figures.get("lru", FAIL)
        for policy in POLICIES:
            value = figures.get(policy, FAIL)
            r.record(f"pc_cpu_{policy}", "mount", value)
            if policy == "lru":
                continue
            r.record(f"pc_cpu_{policy}", "direct", lru)
            diff = FAIL if FAIL in (value, lru) else round(value - lru, 2)
            r.record(f"pc_cpu_diff_{policy}", "mount", diff)
    summary = ", ".join(f"{p} {median(r.metrics[f'pc_cpu_{p}'].mount):.2f} µs" for p in POLICIES
                        if FAIL not in r.metrics[f"pc_cpu_{p}"].mount)
    log(f"    medians: {summary}")


def wait_for_flush(b, since):
    """Waits until the evictor's next access-time flush after SINCE (a loop's end) has written
    the index: the first write to STORE/index.sqlite-wal more than FLUSH_GUARD after SINCE
    (an open's own index writes trail it by a commit window, 5 ms; the flush ticks write every
    2 s, Tunables.accessFlushSeconds), at most ACCESS_FLUSH_WAIT + 0.5 s after SINCE.
    Returns False when it waited that long without seeing one."""
    wal = f"{b.mount.store}/index.sqlite-wal"
    time.sleep(max(0.0, since + FLUSH_GUARD - now()))
    deadline = since + ACCESS_FLUSH_WAIT + 0.5
    try:
        first = os.stat(wal).st_mtime_ns
    except OSError:
        time.sleep(max(0.0, deadline - now()))
        return False
    while now() < deadline:
        time.sleep(0.01)
        try:
            if os.stat(wal).st_mtime_ns != first:
                return True
        except OSError:
            pass
    warn(f"no write to {wal} within {ACCESS_FLUSH_WAIT + 0.5} s of a loop's end")
    return False


def timed_reads(b, pool, directory, policy):
    """The policy set, two untimed reads of every file, the timed one; µs of daemon CPU per open."""
    n = b.opts.ncost
    active = set_policy(b, pool, policy)
    for _ in range(2):
        if b.steps.run(None, [b.files_bin, "read", directory, n, FILE_SIZE]) != 0:
            raise BenchError(f"reading the files of {directory} failed")
    wait_for_flush(b, now())        # the warm-ups' access times reach the index before the window
    pid = b.mount.daemon_pid
    measure.wait_pid_idle(pid)
    before = taskstats.cpu_ns(pid), measure.daemon_cpu_sample(pid)
    out = f"{b.work}/files.out"
    rc = b.steps.run(out, [b.files_bin, "read", directory, n, FILE_SIZE])
    wait_for_flush(b, now())        # and the timed reads' within it
    measure.wait_pid_idle(pid)
    after = taskstats.cpu_ns(pid), measure.daemon_cpu_sample(pid)
    if rc != 0:
        raise BenchError(f"the timed read of {directory} failed")
    if before[0] is not None and after[0] is not None:
        cpu = round((after[0] - before[0]) / n / 1e3, 2)
    else:
        cpu = measure.cpu_per_op(before[1], after[1], n)
        warn("taskstats unavailable (not root?): daemon CPU from /proc (10 ms ticks when a thread exits)")
    lines = read_lines(out)
    try:
        rate = f"{n / float(lines[0].split()[0]):.0f} files/s"
    except (IndexError, ValueError, ZeroDivisionError):
        rate = "rate unknown"
    ran = active if policy != "auto" else f"auto (eviction_active {active}, after: "\
        f"{(measure.cache_attr(pool, 'eviction_active') or '?').strip()})"
    log(f"    {ran:<10} {cpu} µs of daemon CPU per open ({rate})")
    return cpu


# ----------------------------------------------------------------- memory --
def run_memory(b):
    o, r = b.opts, b.results
    n = o.nmem
    tag = count_tag(n)
    log(f"==> policy costs: daemon memory with {n} resident files (store built offline; {o.repeat} run(s), "
        f"one mount per policy and run)")
    b.use_store(f"{b.work}/costs-mem-store", f"{b.work}/costs-mem-mnt")
    per_run = []    # {policy: KiB of VmRSS after ls -f} per run
    exact_per_run = []  # {policy: policy_memory_bytes after ls -f} per run
    growth = {}     # policy -> KiB its build added within the daemon, per run
    built_offline = policy_memory_offline(b, n)
    try:
        b.mount.mount(POOLS)
        b.mount.unmount()
        if b.steps.run(f"{b.work}/synthetic.out", ["python3", f"{b.repo_root}/scripts/lib/bench-synthetic-store.py",
                                                   b.mount.store, n, FILE_SIZE]) != 0:
            raise BenchError(f"building the {tag}-file store failed")
        log(f"    built offline: {' '.join(read_lines(f'{b.work}/synthetic.out'))}")
        for rep in range(1, o.repeat + 1):
            shift = (rep - 1) % len(POLICIES)
            order = POLICIES[shift:] + POLICIES[:shift]
            log(f"==> policy costs: memory, run {rep}/{o.repeat} ({', '.join(order)})")
            figures, exact = {}, {}
            for policy in order:
                figures[policy], exact[policy] = resident_memory(b, policy, growth, built_offline)
            per_run.append(figures)
            exact_per_run.append(exact)
    except (BenchError, OSError) as error:
        warn(f"policy costs, memory per file: {error}")
        r.failed = True
    finally:
        end_part(b)
    record_exact(r, n, exact_per_run, built_offline)
    if not runs_measured(r, "pc_rss", per_run):
        return
    for figures in per_run:
        lru = figures.get("lru")
        for policy in POLICIES:
            value = figures.get(policy)
            r.record(f"pc_rss_{policy}", "mount", FAIL if value is None else round(value / 1024, 1))
            if policy == "lru":
                continue
            r.record(f"pc_rss_{policy}", "direct", FAIL if lru is None else round(lru / 1024, 1))
            per_file = FAIL if value is None or lru is None else round((value - lru) * 1024 / n, 1)
            r.record(f"pc_mem_{policy}", "mount", per_file)
    lrus = [figures["lru"] for figures in per_run if figures.get("lru") is not None]
    if len(lrus) >= 2:
        r.record("pc_mem_spread", "mount", round((max(lrus) - min(lrus)) * 1024 / n, 1))
    log("    per file beyond lru, medians: " + ", ".join(
        f"{p} {median(r.metrics[f'pc_mem_{p}'].mount):.1f} B" for p in POLICIES[1:]
        if FAIL not in r.metrics[f"pc_mem_{p}"].mount))
    # Not a row: within one daemon the build's figure includes the index read's page cache and
    # what the build freed and malloc kept, which the listing then reuses.
    log("    RSS the build added within its daemon, per file, medians: "
        + ", ".join(f"{p} {median(growth[p]) * 1024 / n:.0f} B" for p in POLICIES if growth.get(p)))


def policy_memory_offline(b, n):
    """{kind: bytes} from `cachefs policy-memory` for N residents of FILE_SIZE bytes (each
    policy built as a pool's build builds it), or {} when it fails."""
    out = f"{b.work}/policy-memory.out"
    if b.steps.run(out, [b.cachefs, "policy-memory", "--residents", n, "--size", FILE_SIZE]) != 0:
        warn("cachefs policy-memory failed: no in-memory lru to compare with")
        return {}
    figures = {}
    for line in read_lines(out):
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit():
            figures[fields[0]] = int(fields[1])
    log("    built in memory (cachefs policy-memory), per file: "
        + ", ".join(f"{kind} {value / n:.1f} B" for kind, value in figures.items()))
    return figures


def record_exact(r, n, exact_per_run, built_offline):
    """The exact rows: each run's policy_memory_bytes / N, beyond lru's (the same run's, 0 on
    the index) and beyond an lru built in memory."""
    if not exact_per_run:
        for key in ["pc_exact_lru", "pc_exact_lru_memory"] + [f"pc_exact_{p}" for p in POLICIES[1:]]:
            r.record(key, "mount", FAIL)
        return
    memory_lru = built_offline.get("lru")
    for exact in exact_per_run:
        lru = exact.get("lru")
        r.record("pc_exact_lru", "mount", FAIL if lru is None else round(lru / n, 1))
        r.record("pc_exact_lru_memory", "mount", FAIL if memory_lru is None else round(memory_lru / n, 1))
        for policy in POLICIES[1:]:
            value = exact.get(policy)
            per_file = FAIL if value is None else round(value / n, 1)
            r.record(f"pc_exact_{policy}", "mount", per_file)
            r.record(f"pc_exact_{policy}", "direct", FAIL if lru is None else round(lru / n, 1))
            r.record(f"pc_exact_diff_{policy}", "mount",
                     FAIL if value is None or lru is None else round((value - lru) / n, 1))
            r.record(f"pc_exact_memory_{policy}", "mount",
                     FAIL if value is None or memory_lru is None else round((value - memory_lru) / n, 1))
            r.record(f"pc_exact_memory_{policy}", "direct",
                     FAIL if memory_lru is None else round(memory_lru / n, 1))
    log("    exact policy memory per file, medians: " + ", ".join(
        f"{p} {median(r.metrics[f'pc_exact_{p}'].mount):.1f} B" for p in POLICIES[1:]
        if FAIL not in r.metrics[f"pc_exact_{p}"].mount))


def resident_memory(b, policy, growth, built_offline):
    """One mount of the memory store under POLICY: KiB of VmRSS after ls -f of data, and the
    pool's policy_memory_bytes then."""
    n = b.opts.nmem
    b.mount.mount(POOLS)
    b.mount.check_alive()
    pid = b.mount.daemon_pid
    pool = f"{b.mount.mnt}/data"
    if files_in(pool) != n:
        raise BenchError(f"data holds {files_in(pool)} files after the mount, expected {n}")
    measure.wait_pid_idle(pid)
    mounted = rss_kib(pid)
    active = set_policy(b, pool, policy)
    built = rss_kib(pid)
    if mounted is not None and built is not None:
        growth.setdefault(policy, []).append(built - mounted)
    out = f"{b.work}/listing.out"
    t0 = now()
    rc = b.steps.run(out, ["ls", "-f", pool], env={"LC_ALL": "C"})
    t1 = now()
    lines = measure.count_lines(out)
    open(out, "w").close()
    if rc != 0 or lines != n + 2:
        raise BenchError(f"ls -f {pool}: exit {rc}, {lines} lines, expected {n + 2}")
    measure.wait_pid_idle(pid)
    rss = rss_kib(pid)
    if rss is None:
        raise BenchError(f"no VmRSS for the daemon (pid {pid})")
    exact = measure.cache_attr_int(pool, "policy_memory_bytes")
    if exact is None:
        raise BenchError(f"{pool}: user.cache.policy_memory_bytes unreadable")
    simulations = measure.cache_attr_int(pool, "simulation_memory_bytes")
    offline = built_offline.get(active)
    log(f"    {policy:<8} eviction_active {active}: RSS {mounted} KiB after the mount, {built} KiB after the "
        f"policy's build, ls -f {elapsed(t0, t1)} s, RSS then {rss} KiB; policy_memory_bytes {exact} "
        f"({exact / n:.1f} B per file; built offline {offline if active != 'lru' else 'n/a'}), "
        f"simulation_memory_bytes {simulations}")
    set_policy(b, pool, "lru")      # the next mount starts as lru, with nothing in memory
    b.mount.check_alive()
    b.mount.unmount()
    return rss, exact
