#!/usr/bin/env python3
"""The bench's eviction-policy section (scripts/bench --policies).

Generates traces with a fixed seed (Zipf with alpha 0.6, 0.8 and 1.0; Zipf 0.9 with one
scan of new names in the middle; a loop slightly larger than the 10 % pool; popularity that
shifts halfway), replays each through a real mount at pool sizes of 1 %, 5 %, 10 % and 25 %
of its working set under every policy and `auto`, and prints each hit ratio beside the
simulated one (`cachefs replay`, the engine's own policy code), libCacheSim's reference
implementations when it can be installed, and Belady's optimum. Also: the pool's what-if
curve against replays at those sizes (counted over the trace's second half, since the curve
describes the pool's recent requests), requests per second and the daemon's CPU per request.

Every file is 4 KiB, so object and byte hit ratios are the same; pools are limited by
max_files with low_watermark 100, so eviction brings a pool to its limit, not below.
Eviction through the mount is asynchronous (the evictor's thread runs beside the replay), so
a pool may hold a few more files than its limit for a moment: the mount's hit ratio can be a
little above the simulated one.

Then traces of mixed sizes, by `cachefs replay` only (files of up to 256 MiB are not
replayed through a mount): lognormal sizes with and without a one-time scan of large files,
and heavy-tailed sizes whose small files are the popular ones, at pools of 1 %, 5 %, 10 % and
25 % of the working set's bytes, for each goal (files, bytes, cost): every policy's and
`auto`'s measure of the goal beside the upper bound (PFOO-L) and libCacheSim's LRU, S3-FIFO,
SIEVE, W-TinyLFU, LHD and GDSF on the same trace.

Last, traces nobody tuned for (issue 43), by `cachefs replay` beside libCacheSim, at 1 %, 5 %
and 10 %: a block I/O-like trace with a long tail of one-time reads whose leading policy changes
with its phases (scripts/lib/block_trace.py), where `auto` must end within 0.01 of the best
fixed policy; and a CDN-like trace of 1 KiB to 7 MiB objects where 58 % of the requests are
first requests (scripts/lib/cdn_trace.py), where `tinylfu` must end within 0.02 of
libCacheSim's W-TinyLFU (and `auto` within 0.01 of the best fixed policy). MISSED marks a row
whose target is not met.

Usage: policy_bench.py --cachefs BIN --work DIR [--quick] [--json FILE]
                       [--reference-python PYTHON] [--mixed-sizes-only] [--untuned-only]
--reference-python (or LIBCACHESIM_PYTHON): a Python with libcachesim installed (else one is
pip-installed into the work dir); --mixed-sizes-only: only the mixed-size rows (a few minutes);
--untuned-only: only the rows of the traces nobody tuned for (about a minute).
"""
import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import block_trace  # noqa: E402
from trace_sampling import zipf_sampler  # noqa: E402
import cdn_trace  # noqa: E402
import replay_through_mount  # noqa: E402

POLICIES = ["lru", "s3fifo", "sieve", "tinylfu", "auto"]
# `gdsf-files` is a candidate under the bytes goal only; `cachefs replay` leaves it out ("-") elsewhere.
MIXED_POLICIES = ["lru", "s3fifo", "sieve", "tinylfu", "gdsf", "gdsf-files", "auto"]
GOALS = ["files", "bytes", "cost"]
# libCacheSim's names, in the mixed-size table's order; the issue's target compares with the
# best of the last four.
LIBCACHESIM_MIXED = ["LRU", "S3FIFO", "Sieve", "WTinyLFU", "LHD", "GDSF"]
LIBCACHESIM_TARGET = ["S3FIFO", "WTinyLFU", "LHD", "GDSF"]
MEASURES = {"files": "object", "bytes": "byte", "cost": "cost"}
SIZES = [1, 5, 10, 25]
MULTIPLIERS = [0.125, 0.25, 0.5, 1, 2, 4, 8]
SEED = 20261124


def make_traces(objects, requests):
    """name -> list of keys. Each is deterministic for its seed."""
    traces = {}
    for alpha in (0.6, 0.8, 1.0):
        rng = random.Random(SEED)
        draw = zipf_sampler(objects, alpha, rng)
        traces[f"zipf-{alpha}"] = [f"k{draw()}" for _ in range(requests)]
    rng = random.Random(SEED + 1)
    draw = zipf_sampler(objects, 0.9, rng)
    half = requests // 2
    scan = [f"scan{index}" for index in range(int(objects * 0.4))]
    traces["zipf-0.9-scan"] = [f"k{draw()}" for _ in range(half)] + scan + [f"k{draw()}" for _ in range(half)]
    loop_length = int(objects * 0.10 * 1.1)
    traces["loop"] = [f"k{index % loop_length}" for index in range(requests)]
    rng = random.Random(SEED + 2)
    draw = zipf_sampler(objects, 0.9, rng)
    permutation = list(range(objects))
    random.Random(SEED + 3).shuffle(permutation)
    traces["shift"] = ([f"k{draw()}" for _ in range(half)]
                       + [f"k{permutation[draw()]}" for _ in range(requests - half)])
    return traces


def lognormal_size(rng, median, sigma=2.0, low=1024, high=256 << 20):
    return int(min(high, max(low, rng.lognormvariate(math.log(median), sigma))))


def miss_cost(rng, size):
    """Milliseconds: 5 ms, a lognormal latency (median 40 ms) and the size at 50 MB/s."""
    return 5 + rng.lognormvariate(math.log(40), 1.0) + size / 50e6 * 1000


def make_mixed_traces(objects, requests):
    """name -> list of (key, size, cost). Each is deterministic for its seed."""
    traces = {}
    rng = random.Random(SEED + 10)
    draw = zipf_sampler(objects, 0.9, rng)
    sizes = [lognormal_size(rng, 65536) for _ in range(objects)]
    costs = [miss_cost(rng, size) for size in sizes]
    reads = [draw() for _ in range(requests)]
    traces["lognormal"] = [(f"k{key}", sizes[key], costs[key]) for key in reads]
    # The same reads with a one-time scan of large files (median 8 MiB; a backup, a bulk
    # export) in the middle: as many bytes as the whole working set, none read again.
    scan, scanned = [], 0
    while scanned < sum(sizes):
        size = lognormal_size(rng, 8 << 20, sigma=1.0)
        scan.append((f"scan{len(scan)}", size, miss_cost(rng, size)))
        scanned += size
    half = requests // 2
    traces["lognormal-scan"] = traces["lognormal"][:half] + scan + traces["lognormal"][half:]
    # Heavy-tailed sizes (Pareto, shape 1.2, from 2 KiB) where the popular files are the
    # small ones: the most read name gets the smallest size.
    rng = random.Random(SEED + 11)
    draw = zipf_sampler(objects, 0.9, rng)
    sizes = sorted(int(min(256 << 20, 2048 * rng.paretovariate(1.2))) for _ in range(objects))
    costs = [miss_cost(rng, size) for size in sizes]
    traces["pareto-small-hot"] = [(f"k{key}", sizes[key], costs[key]) for key in (draw() for _ in range(requests))]
    return traces


def write_mixed_trace(path, requests):
    with open(path, "w", encoding="utf-8") as trace:
        trace.write("key,size,op,cost\n")
        trace.write("".join(f"{key},{size},get,{cost:.1f}\n" for key, size, cost in requests))


def working_set_bytes(requests):
    sizes = {}
    for key, size, _ in requests:
        sizes.setdefault(key, size)
    return sum(sizes.values())


def write_trace(path, keys):
    with open(path, "w", encoding="utf-8") as trace:
        trace.write("".join(f"{key},4096\n" for key in keys))


def simulated(cachefs, trace_path, sizes, policies=None, auto=True, warmup="0"):
    """cachefs replay --json: {(policy, size): hit ratio}."""
    command = [cachefs, "replay", trace_path, "--objects", "--json", "--warmup", warmup]
    for size in sizes:
        command += ["--size", str(size)]
    for policy in policies or []:
        command += ["--policy", policy]
    if not auto:
        command.append("--no-auto")
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    report = json.loads(result.stdout)
    return {(row["policy"], row["size"]): row["object_hit_ratio"] for row in report["rows"]}


def libcachesim_figures(python, trace_path, sizes):
    """Hit ratios of libCacheSim's LRU, S3FIFO, Sieve, WTinyLFU and Belady, or None."""
    if python is None:
        return None
    script = r"""
import json, sys
import libcachesim as lcs
keys = [line.split(',')[0] for line in open(sys.argv[1])]
ids = {}
sequence = [ids.setdefault(key, len(ids)) for key in keys]
following, last = [0] * len(sequence), {}
for index in range(len(sequence) - 1, -1, -1):
    following[index] = last.get(sequence[index], 1 << 62)
    last[sequence[index]] = index
out = {}
for size in json.loads(sys.argv[2]):
    capacity = size * 4096
    for name, make in [("lru", lcs.LRU), ("s3fifo", lcs.S3FIFO), ("sieve", lcs.Sieve),
                       ("tinylfu", lcs.WTinyLFU), ("belady", lcs.Belady)]:
        cache, hits = make(cache_size=capacity), 0
        for index, obj in enumerate(sequence):
            request = lcs.Request()
            request.obj_id, request.obj_size = obj, 4096
            request.next_access_vtime = following[index]
            hits += 1 if cache.get(request) else 0
        out[f"{name} {size}"] = hits / len(sequence)
print(json.dumps(out))
"""
    result = subprocess.run([python, "-c", script, trace_path, json.dumps(sizes)], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"libcachesim failed: {result.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    figures = json.loads(result.stdout)
    return {(key.split()[0], int(key.split()[1])): value for key, value in figures.items()}


def libcachesim_mixed_figures(python, trace_path, capacities):
    """{(name, capacity): {"object", "byte", "cost"}} of libCacheSim's policies in
    LIBCACHESIM_MIXED on a mixed-size trace, or None (said why)."""
    if python is None:
        return None
    script = r"""
import json, sys
import libcachesim as lcs
rows = [line.rstrip().split(',') for line in open(sys.argv[1]) if not line.startswith('key,')]
ids = {}
sequence = [(ids.setdefault(row[0], len(ids)), int(row[1]), float(row[3])) for row in rows]
following, last = [0] * len(sequence), {}
for index in range(len(sequence) - 1, -1, -1):
    following[index] = last.get(sequence[index][0], 1 << 62)
    last[sequence[index][0]] = index
total_bytes = sum(size for _, size, _ in sequence)
total_cost = sum(cost for _, _, cost in sequence)
out = {}
for capacity in json.loads(sys.argv[2]):
    for name in json.loads(sys.argv[3]):
        cache = getattr(lcs, name)(cache_size=capacity)
        hits = hit_bytes = hit_cost = 0
        for index, (obj, size, cost) in enumerate(sequence):
            request = lcs.Request()
            request.obj_id, request.obj_size = obj, size
            request.next_access_vtime = following[index]
            if cache.get(request):
                hits += 1
                hit_bytes += size
                hit_cost += cost
        out[f"{name} {capacity}"] = {"object": hits / len(sequence), "byte": hit_bytes / total_bytes,
                                     "cost": hit_cost / total_cost if total_cost else 0}
print(json.dumps(out))
"""
    result = subprocess.run([python, "-c", script, trace_path, json.dumps(capacities), json.dumps(LIBCACHESIM_MIXED)],
                            capture_output=True, text=True)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        print(f"policies: libcachesim failed on {trace_path}, its columns show '-': "
              f"{result.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    # libCacheSim prints its own warnings on stdout (its W-TinyLFU's counting filter overflows
    # above 2 GiB of capacity counted in bytes, and it says so): shown, since they bear on its figures.
    for line in sorted(set(lines[:-1])):
        print(f"  libCacheSim said, on {os.path.basename(trace_path)}: {line}")
    figures = json.loads(lines[-1])
    return {(key.split()[0], int(key.split()[1])): value for key, value in figures.items()}


def replay_mixed(cachefs, trace_path, capacities, goal):
    """cachefs replay --goal GOAL --json: {(policy, capacity): row}."""
    command = [cachefs, "replay", trace_path, "--json", "--goal", goal]
    for capacity in capacities:
        command += ["--size", str(capacity)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return {(row["policy"], row["size"]): row for row in json.loads(result.stdout)["rows"]}


def goal_measure(row, goal):
    """A replay row's (or libCacheSim figure's) measure of the goal."""
    if "object_hit_ratio" in row:
        return {"files": row["object_hit_ratio"], "bytes": row["byte_hit_ratio"],
                "cost": row["cost_saved_ratio"]}[goal]
    return row[MEASURES[goal]]


def libcachesim_version(python):
    result = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('libcachesim'))"],
                            capture_output=True, text=True)
    return result.stdout.strip() or "version unknown"


def mixed_size_section(cachefs, work, reference, quick):
    """The mixed-size rows: printed, and returned for the JSON."""
    objects, requests = (2_000, 20_000) if quick else (10_000, 100_000)
    traces_dir = os.path.join(work, "traces")
    os.makedirs(traces_dir, exist_ok=True)
    print(f"\nMixed sizes: {objects:,} names, {requests:,} reads per trace (plus the scan's), by `cachefs replay`; "
          f"each cell the goal's measure (object hit ratio, byte hit ratio, or share of the cost saved)")
    if reference is None:
        print("libCacheSim: NOT AVAILABLE (see the message above); its columns show '-' and its target is not checked")
    else:
        print(f"libCacheSim {libcachesim_version(reference)} ({reference})")
    columns = MIXED_POLICIES + ["bound"] + [f"lcs-{name}" for name in LIBCACHESIM_MIXED]
    print(f"{'trace':<17} {'size':>4} {'goal':<5} " + " ".join(f"{column[:8]:>8}" for column in columns))
    rows, summary = [], []
    for name, trace in make_mixed_traces(objects, requests).items():
        trace_path = os.path.join(traces_dir, f"{name}.csv")
        write_mixed_trace(trace_path, trace)
        working_set = working_set_bytes(trace)
        capacities = {percent: max(1, round(working_set * percent / 100)) for percent in SIZES}
        libcs = libcachesim_mixed_figures(reference, trace_path, list(capacities.values()))
        for goal in GOALS:
            replayed = replay_mixed(cachefs, trace_path, list(capacities.values()), goal)
            for percent, capacity in capacities.items():
                cells = {policy: goal_measure(replayed[(policy, capacity)], goal)
                         if (policy, capacity) in replayed else None for policy in MIXED_POLICIES}
                cells["bound"] = goal_measure(replayed[("upper-bound", capacity)], goal)
                for lcs_name in LIBCACHESIM_MIXED:
                    cells[f"lcs-{lcs_name}"] = goal_measure(libcs[(lcs_name, capacity)], goal) if libcs else None
                print(f"{name:<17} {percent:>3}% {goal:<5} "
                      + " ".join(f"{ratio_text(cells[column]):>8}" for column in columns), flush=True)
                best_fixed = max(cells[policy] for policy in MIXED_POLICIES
                                 if policy != "auto" and cells[policy] is not None)
                best_reference = max(cells[f"lcs-{lcs_name}"] for lcs_name in LIBCACHESIM_TARGET) if libcs else None
                rows.append({"trace": name, "size_percent": percent, "capacity_bytes": capacity, "goal": goal,
                             "measure": MEASURES[goal], "cells": cells})
                summary.append({"trace": name, "size_percent": percent, "goal": goal,
                                "best_minus_libcachesim": None if best_reference is None
                                else best_fixed - best_reference,
                                "auto_minus_best_fixed": cells["auto"] - best_fixed})
    print("\nTargets (mixed sizes): best cachefs >= best of libCacheSim's S3FIFO, WTinyLFU, LHD, GDSF - 0.01; "
          "auto >= best fixed - 0.01")
    for item in summary:
        difference = item["best_minus_libcachesim"]
        missed = (difference is not None and difference < -0.01) or item["auto_minus_best_fixed"] < -0.01
        print(f"{item['trace']:<17} {item['size_percent']:>3}% {item['goal']:<5}  best - libCacheSim: "
              f"{'-' if difference is None else f'{difference:+.3f}':>6}  auto - best fixed: "
              f"{item['auto_minus_best_fixed']:+.3f}{'  MISSED' if missed else ''}")
    return {"rows": rows, "summary": summary}


UNTUNED_SIZES = [1, 5, 10]


def untuned_section(cachefs, work, reference):
    """The rows of the traces nobody tuned for (issue 43): printed, and returned for the JSON."""
    traces_dir = os.path.join(work, "traces")
    os.makedirs(traces_dir, exist_ok=True)
    print("\nTraces nobody tuned for, by `cachefs replay` (object hit ratios); libCacheSim's beside them")
    if reference is None:
        print("libCacheSim: NOT AVAILABLE (see the message above); its columns show '-' and its target is not checked")
    rows = []
    columns = ["lru", "s3fifo", "sieve", "tinylfu", "gdsf", "auto"]
    print(f"{'trace':<11} {'size':>4} " + " ".join(f"{column:>7}" for column in columns)
          + f" {'lcs-LRU':>7} {'lcs-S3F':>7} {'lcs-Sie':>7} {'lcs-WTL':>7}  target")

    # The block trace: unit sizes, pools counted in files; auto against the best fixed policy.
    keys = block_trace.make_trace()
    trace_path = os.path.join(traces_dir, "block-tail.csv")
    write_trace(trace_path, keys)
    working_set = len(set(keys))
    files_by_size = {percent: max(1, working_set * percent // 100) for percent in UNTUNED_SIZES}
    sim = simulated(cachefs, trace_path, list(files_by_size.values()))
    libcs = libcachesim_figures(reference, trace_path, list(files_by_size.values()))
    for percent, files in files_by_size.items():
        cells = {policy: sim.get((policy, files)) for policy in columns}
        best = max((cells[policy], policy) for policy in columns if policy != "auto" and cells[policy] is not None)
        difference = cells["auto"] - best[0]
        reference_cells = [libcs.get((name, files)) if libcs else None for name in ("lru", "s3fifo", "sieve", "tinylfu")]
        print(f"{'block-tail':<11} {percent:>3}% " + " ".join(f"{ratio_text(cells[column]):>7}" for column in columns)
              + " " + " ".join(f"{ratio_text(value):>7}" for value in reference_cells)
              + f"  auto - best fixed ({best[1]}): {difference:+.3f}{'  MISSED' if difference < -0.01 else ''}")
        rows.append({"trace": "block-tail", "size_percent": percent, "files": files, "cells": cells,
                     "libcachesim": dict(zip(("lru", "s3fifo", "sieve", "tinylfu"), reference_cells)),
                     "auto_minus_best_fixed": difference, "missed": difference < -0.01})

    # The CDN-like trace: mixed sizes, pools counted in bytes; tinylfu against libCacheSim's W-TinyLFU.
    requests = cdn_trace.make_trace()
    trace_path = os.path.join(traces_dir, "cdn-first.csv")
    write_mixed_trace(trace_path, requests)
    working_set = working_set_bytes(requests)
    capacities = {percent: max(1, round(working_set * percent / 100)) for percent in UNTUNED_SIZES}
    replayed = replay_mixed(cachefs, trace_path, list(capacities.values()), "files")
    libcs = libcachesim_mixed_figures(reference, trace_path, list(capacities.values()))
    for percent, capacity in capacities.items():
        cells = {policy: replayed[(policy, capacity)]["object_hit_ratio"] if (policy, capacity) in replayed else None
                 for policy in columns}
        best = max((cells[policy], policy) for policy in columns if policy != "auto" and cells[policy] is not None)
        auto_difference = cells["auto"] - best[0]
        reference_cells = [libcs[(name, capacity)]["object"] if libcs else None
                           for name in ("LRU", "S3FIFO", "Sieve", "WTinyLFU")]
        tinylfu_difference = None if libcs is None else cells["tinylfu"] - reference_cells[3]
        missed = (tinylfu_difference is not None and tinylfu_difference < -0.02) or auto_difference < -0.01
        print(f"{'cdn-first':<11} {percent:>3}% " + " ".join(f"{ratio_text(cells[column]):>7}" for column in columns)
              + " " + " ".join(f"{ratio_text(value):>7}" for value in reference_cells)
              + f"  tinylfu - lcs-WTinyLFU: {'-' if tinylfu_difference is None else f'{tinylfu_difference:+.3f}'}"
              + f", auto - best fixed ({best[1]}): {auto_difference:+.3f}{'  MISSED' if missed else ''}")
        rows.append({"trace": "cdn-first", "size_percent": percent, "capacity_bytes": capacity, "cells": cells,
                     "libcachesim": dict(zip(("LRU", "S3FIFO", "Sieve", "WTinyLFU"), reference_cells)),
                     "tinylfu_minus_libcachesim": tinylfu_difference, "auto_minus_best_fixed": auto_difference,
                     "missed": missed})
    print("Targets: block-tail auto >= best fixed - 0.01; cdn-first tinylfu >= libCacheSim's W-TinyLFU - 0.02 "
          "and auto >= best fixed - 0.01")
    return rows


def install_libcachesim(work):
    """A virtual environment in the work dir with libcachesim, or None (said why)."""
    venv = os.path.join(work, "venv")
    try:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "libcachesim"], check=True,
                       capture_output=True, timeout=600)
    except (subprocess.SubprocessError, OSError) as error:
        print(f"policies: libcachesim could not be installed ({error}); its column is left out", file=sys.stderr)
        return None
    return os.path.join(venv, "bin", "python")


def daemon_cpu_ns(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[0])
        except OSError:
            continue
    return total


def daemon_pid(store):
    """The pid in the store's daemon record (STORE/daemon.state: 'serving PID MOUNTPOINT')."""
    with open(os.path.join(store, "daemon.state")) as record:
        words = record.read().split()
    return int(words[words.index("serving") + 1])


def replay_on_mount(cachefs, work, trace_path, keys, files, policy):
    store, mountpoint = os.path.join(work, "store"), os.path.join(work, "mnt")
    for path in (store, mountpoint):
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
    subprocess.run([cachefs, "mount", store, mountpoint, "--pool", "bench=0", "-o", "min_free=0"], check=True)
    try:
        pool = os.path.join(mountpoint, "bench")
        for name, value in (("max_files", str(files)), ("low_watermark", "100"), ("eviction", policy)):
            os.setxattr(pool, f"user.cache.{name}", value.encode())
        pid = daemon_pid(store)
        payload = b"c" * 4096
        cpu_before, start = daemon_cpu_ns(pid), time.monotonic()
        hits = 0
        for key in keys:
            path = os.path.join(pool, key)
            if replay_through_mount.read_whole(path, 4096):
                hits += 1
            else:
                replay_through_mount.write_file(path, 4096, payload)
        seconds = time.monotonic() - start
        cpu = daemon_cpu_ns(pid) - cpu_before
        curve = os.getxattr(pool, "user.cache.hit_ratio_curve").decode()
        active = os.getxattr(pool, "user.cache.eviction_active").decode()
    finally:
        pid = None
        try:
            pid = daemon_pid(store)
        except (OSError, ValueError):
            pass
        subprocess.run(["fusermount3", "-u", mountpoint], check=False)
        # The daemon flushes and exits after the unmount; the next run reuses its store path.
        for _ in range(600):
            if not os.path.ismount(mountpoint) and (pid is None or not os.path.exists(f"/proc/{pid}")):
                break
            time.sleep(0.05)
    return {
        "hit_ratio": hits / len(keys), "requests_per_second": len(keys) / seconds,
        "daemon_us_per_request": cpu / 1000 / len(keys), "curve": curve, "active": active,
    }


def ratio_text(value):
    return "-" if value is None else f"{value:.3f}"


def parse_curve(text):
    points = []
    for pair in filter(None, text.split(",")):
        size, ratio = pair.split("=")
        points.append((int(size[:-5]) if size.endswith("files") else int(size), float(ratio)))
    return points


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cachefs", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--reference-python", default=os.environ.get("LIBCACHESIM_PYTHON"))
    parser.add_argument("--mixed-sizes-only", action="store_true")
    parser.add_argument("--untuned-only", action="store_true")
    options = parser.parse_args()
    objects, requests = (2_000, 20_000) if options.quick else (10_000, 100_000)
    traces_dir = os.path.join(options.work, "traces")
    os.makedirs(traces_dir, exist_ok=True)
    help_text = subprocess.run([options.cachefs, "replay", "--help"], capture_output=True, text=True)
    if help_text.returncode != 0:
        print("policies: this cachefs has no `replay` command; section skipped")
        return 0
    if options.reference_python and not os.access(options.reference_python, os.X_OK):
        print(f"policies: {options.reference_python} (--reference-python) is not an executable; "
              "libCacheSim's columns are left out", file=sys.stderr)
        reference = None
    else:
        reference = options.reference_python or install_libcachesim(options.work)
    if options.untuned_only:
        untuned = untuned_section(options.cachefs, options.work, reference)
        if options.json:
            with open(options.json, "w", encoding="utf-8") as out:
                json.dump({"untuned": untuned}, out, indent=2)
        return 0
    if options.mixed_sizes_only:
        mixed = mixed_size_section(options.cachefs, options.work, reference, options.quick)
        if options.json:
            with open(options.json, "w", encoding="utf-8") as out:
                json.dump({"mixed_sizes": mixed}, out, indent=2)
        return 0
    rows, summary = [], []
    header = (f"{'trace':<14} {'size':>5} {'policy':<8} {'mount':>6} {'sim':>6} {'libcs':>6} {'belady':>6} "
              f"{'of MIN':>6} {'req/s':>7} {'µs/req':>6} {'curve err':>9}")
    print(f"\nEviction policies: {objects:,} names, {requests:,} requests of 4 KiB files per trace, "
          f"through a mount (hit ratios; 'of MIN' = mount / Belady)")
    print(header)
    for name, keys in make_traces(objects, requests).items():
        trace_path = os.path.join(traces_dir, f"{name}.csv")
        write_trace(trace_path, keys)
        working_set = len(set(keys))
        files_by_size = {percent: max(1, working_set * percent // 100) for percent in SIZES}
        sizes = list(files_by_size.values())
        sim = simulated(options.cachefs, trace_path, sizes)
        libcs = libcachesim_figures(reference, trace_path, sizes)
        for percent, files in files_by_size.items():
            best_fixed = max(sim[(policy, files)] for policy in POLICIES if policy != "auto")
            belady = sim[("belady", files)]
            measured = {}
            for policy in POLICIES:
                result = replay_on_mount(options.cachefs, options.work, trace_path, keys, files, policy)
                measured[policy] = result["hit_ratio"]
                curve_error = None
                points = parse_curve(result["curve"])
                if points and policy != "auto":
                    # The curve describes the pool's recent requests: compare with a replay
                    # counted over the trace's second half (the cache warmed by the first).
                    expected = simulated(options.cachefs, trace_path, sorted({size for size, _ in points}), [policy],
                                         auto=False, warmup="50%")
                    curve_error = max(abs(ratio - expected[(policy, size)]) for size, ratio in points)
                row = {
                    "trace": name, "size_percent": percent, "files": files, "policy": policy,
                    "mount_hit_ratio": result["hit_ratio"], "simulated_hit_ratio": sim[(policy, files)],
                    "libcachesim_hit_ratio": libcs.get((policy, files)) if libcs else None,
                    "belady_hit_ratio": belady, "of_belady": result["hit_ratio"] / belady if belady else None,
                    "requests_per_second": result["requests_per_second"],
                    "daemon_us_per_request": result["daemon_us_per_request"],
                    "curve_max_error": curve_error, "auto_chose": result["active"] if policy == "auto" else None,
                }
                rows.append(row)
                print(f"{name:<14} {percent:>4}% {policy:<8} {row['mount_hit_ratio']:>6.3f} "
                      f"{row['simulated_hit_ratio']:>6.3f} {ratio_text(row['libcachesim_hit_ratio']):>6} "
                      f"{belady:>6.3f} {row['of_belady'] or 0:>6.2f} {row['requests_per_second']:>7.0f} "
                      f"{row['daemon_us_per_request']:>6.1f} {ratio_text(curve_error):>9}", flush=True)
            best_mount = max(measured[policy] for policy in POLICIES if policy != "auto")
            # Issue 29: s3fifo and tinylfu within 0.01 of libCacheSim's S3-FIFO and W-TinyLFU.
            against_reference = ({policy: sim[(policy, files)] - libcs[(policy, files)]
                                  for policy in ("s3fifo", "tinylfu")} if libcs else {})
            summary.append({
                "against_libcachesim": against_reference,
                "trace": name, "size_percent": percent,
                "auto_minus_best_fixed_simulated": sim[("auto", files)] - best_fixed,
                "auto_minus_best_fixed_mount": measured["auto"] - best_mount,
                "best_of_belady": best_fixed / belady if belady else None,
                "s3fifo_minus_lru_mount": measured["s3fifo"] - measured["lru"],
            })
    print("\nTargets: auto >= best fixed - 0.01; best >= 0.9x Belady; s3fifo - lru >= 0.05 on zipf-0.9-scan at 5 %;"
          " curve within 0.03; s3fifo and tinylfu (sim) >= libCacheSim's S3-FIFO and W-TinyLFU - 0.01")
    for item in summary:
        against = item["against_libcachesim"]
        missed = any(difference < -0.01 for difference in against.values())
        print(f"{item['trace']:<14} {item['size_percent']:>4}%  auto - best fixed: "
              f"{item['auto_minus_best_fixed_mount']:+.3f} (mount) {item['auto_minus_best_fixed_simulated']:+.3f} (sim)"
              f"  best/Belady {item['best_of_belady']:.2f}  s3fifo - lru {item['s3fifo_minus_lru_mount']:+.3f}"
              + "".join(f"  {policy} - libCacheSim {difference:+.3f}" for policy, difference in against.items())
              + ("  MISSED" if missed else ""))
    errors = [row["curve_max_error"] for row in rows if row["curve_max_error"] is not None]
    if errors:
        print(f"what-if curve: largest error {max(errors):.3f} over {len(errors)} curves")
    mixed = mixed_size_section(options.cachefs, options.work, reference, options.quick)
    untuned = untuned_section(options.cachefs, options.work, reference)
    if options.json:
        with open(options.json, "w", encoding="utf-8") as out:
            json.dump({"rows": rows, "summary": summary, "mixed_sizes": mixed, "untuned": untuned}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
