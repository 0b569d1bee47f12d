"""The printed table and the JSON file."""
import json
import os

from .results import Metric, Section, fmt_value, row

RULE = "-----------------------------------+------------------+------------------+--------+----------+-------"


HOT_PATH_NOTE = """\
Hot path, medians of {repeat} runs: every run's creates first (no unlink before them: ext4 without
a journal makes creates skip inodes freed in the last minute), side after side, passthrough_hp and
cachefs first in turn; then each run's hits and unlinks. Hits are warm: each file was read twice
(untimed) before the timed read, so its name and bytes are in the mount's caches and only the open
and close reach a daemon, the same on every side. Ratios: the first column over the second for
files/s, the second over the first for CPU (higher is better). Daemon CPU per op: from just before
the loop until the daemon is idle after it (cachefs's unlinks: until the store has freed their
bytes); "deferred": a create's share of the daemon's CPU from its loop's end to the settle's end
(cachefs's background sync; passthrough_hp writes a file back at its close, within the loop)."""


LATENCY_NOTE = """\
getxattr rows (ms; measured once): one process reads user.cache.state of a cached 1 KiB file in
pool hot in a loop; evicting = the calls started while a pass under s3fifo removed 80 % of the
files of data/bulk (not loaded since the mount), idle = those of an idle window just before it;
"busy loops": one per core, running through both windows."""


POLICY_COSTS_NOTE = """\
Policy costs, medians of {repeat} runs, policies interleaved. CPU: the daemon's CPU (all its
threads, exited ones included: taskstats) per warm open + read 1 KiB + close of {ncost} cached
files (only OPEN and RELEASE reach it), from before the loop until it is idle after the access-
time flush that follows it (its reads' access times written to the index). Memory: the daemon's
VmRSS after `ls -f` of {nmem} resident files, one mount per policy and run; "beyond lru" =
(RSS - the same run's lru RSS) / {nmem}, the median of the runs; "lru: its RSS's spread" =
(largest - smallest lru RSS of the runs) / {nmem}, what one such figure may be off by. Exact:
the pool's user.cache.policy_memory_bytes (the running policy's arrays' capacities) after the
same listing / {nmem}; lru's is 0 (its order is the index's), so "beyond lru" is the policy's
whole figure, and "beyond an in-memory lru" subtracts lru's own structure for as many residents
(`cachefs policy-memory`). The 48-byte target is judged on the exact rows, not on RSS."""


def line(*cols):
    return "%-34s | %16s | %16s | %6s | %8s | %s" % cols


def print_table(b):
    print()
    # A table that starts with a section has that section's header instead.
    if not (b.results.items and isinstance(b.results.items[0], Section)):
        print(line("workload", "mount", "direct", "ratio", "target", "status"))
        print(RULE)
    for item in b.results.items:
        if isinstance(item, Section):    # a section: its own header row
            print(RULE)
            print(line(item.title, item.col1, item.col2, "ratio", "target", "status"))
            print(RULE)
            continue
        v = row(item)
        print(line(item.label, fmt_value(item.unit, v["mount"]), fmt_value(item.unit, v["direct"]),
                   v["ratio"], v["target"], v["status"]))
    print()
    o = b.opts
    if o.mode not in ("latency", "hotpath", "policycosts"):
        print(f"Medians of {o.repeat} run(s); ratio = mount/direct (rates), direct_s/mount_s (ls, find).")
    if o.mode not in ("scale", "origin", "encryption", "latency", "hotpath", "policycosts"):
        print("Name operations: rename, cold stat, unlink and rmdir act on synced files (settled on")
        print("both sides); cold stat = after echo 2 > drop_caches (every name a LOOKUP to the daemon).")
    if o.mode not in ("origin", "latency", "hotpath", "policycosts"):
        print("Daemon CPU per op: run time of the daemon's threads during the row, per operation.")
    if o.mode == "scale":
        print(f"Scale: one directory of empty files, measured once at each end ({b.scale_count} files at the end).")
    elif o.mode == "origin":
        print("Read-through: a pool whose origin is nginx on 127.0.0.1, against curl of the same URLs")
        print("(first byte: head -c 1 of an uncached file, its lookup's request included; blocks: block_size 4M).")
    elif o.mode == "threading":
        print("Threading: each run mounts twice, default threads then -o single_threaded.")
    elif o.mode == "encryption":
        print("Encryption: ratio = encrypted store / plaintext store, both through their mounts, run in turn.")
    elif o.mode == "latency":
        print(LATENCY_NOTE)
    elif o.mode == "hotpath":
        print(HOT_PATH_NOTE.format(repeat=o.repeat))
    elif o.mode == "policycosts":
        print(POLICY_COSTS_NOTE.format(ncost=f"{o.ncost:,}", nmem=f"{o.nmem:,}", repeat=o.repeat))
    else:
        print("Engine: evict = files evicted/s after max_size 1M vs find -delete on the store's disk;")
        print(f"hot = warm reads while the evictor empties pool data vs idle (medians of {o.hot_reads} reads")
        print("per run); memory rows: synthetic stores built offline, measured once.")
        print(LATENCY_NOTE)


def write_json(b, path, info):
    """Every row: its section, what its two sides are (the section's column titles: mount
    and direct, or evicting and idle, ...), name, unit, each run's values on both sides
    (numbers, "fail", or a text for the verify rows), the medians, ratio, target and status."""
    rows = []
    columns = ["mount", "direct"]
    for item in b.results.items:
        if isinstance(item, Section):
            columns = [item.col1, item.col2]
        if not isinstance(item, Metric):
            continue
        v = row(item)
        rows.append({
            "section": item.section,
            "columns": list(item.columns) if item.columns else columns,
            "key": item.key,
            "name": item.label.strip(),
            "unit": item.unit,
            "kind": item.kind,
            "mount": item.mount,
            "direct": item.direct,
            "mount_median": None if v["mount"] == "-" else v["mount"],
            "direct_median": None if v["direct"] == "-" else v["direct"],
            "ratio": float(v["ratio"]) if v["ratio"] != "-" else None,
            "target": numeric_target(item.target),
            "target_text": v["target"],
            "status": v["status"],
        })
    document = dict(info)
    document["failed"] = b.results.failed
    document["rows"] = rows
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def numeric_target(target):
    """A row's target as a number; None for none, or for a text row's target (the text it
    should show, which `target_text` carries)."""
    try:
        return float(target) if target is not None else None
    except ValueError:
        return None
