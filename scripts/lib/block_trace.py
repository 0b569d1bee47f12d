#!/usr/bin/env python3
"""A block I/O-like trace of 4 KiB blocks with a long tail of one-time reads (KEY,SIZE), fixed seed.

110,000 requests over 51,563 blocks, 37,121 of them read once. 42 % of the requests read a
block never read before (a scan); the rest alternate between two kinds of phase of 6,000 to
14,000 requests each: re-reads of the blocks read lately (any of the last 3,000 requests'),
and reads of a warm set of 6,000 blocks by Zipf 0.8 popularity. Shaped after a real block trace on which `auto` missed the best fixed
policy (issue 43): which policy leads changes with the phase, and a switch made on one phase's
lead costs the state the old policy had built.

Usage: block_trace.py OUT.csv
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_sampling import zipf_sampler  # noqa: E402

SEED = 1


def make_trace(requests=110_000, seed=SEED, scan_share=0.42, warm_blocks=6000, recent_window=3000,
               shortest_phase=6000, longest_phase=14000):
    """A list of block names."""
    rng = random.Random(seed)
    draw = zipf_sampler(warm_blocks, 0.8, rng)
    warm = [f"w{index}" for index in range(warm_blocks)]
    recent, keys, fresh = [], [], 0
    phase, left = "recency", rng.randint(shortest_phase, longest_phase)
    while len(keys) < requests:
        if left == 0:
            phase = "frequency" if phase == "recency" else "recency"
            left = rng.randint(shortest_phase, longest_phase)
        left -= 1
        if rng.random() < scan_share:
            key = f"s{fresh}"
            fresh += 1
        elif phase == "frequency" or not recent:
            key = warm[draw()]
        else:
            key = recent[-1 - int(rng.random() * min(len(recent), recent_window))]
        keys.append(key)
        recent.append(key)
        if len(recent) > 4 * recent_window:
            del recent[:recent_window]
    return keys


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(0 if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else 2)
    keys = make_trace()
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write("".join(f"{key},4096\n" for key in keys))
    counts = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    once = sum(1 for count in counts.values() if count == 1)
    print(f"{len(keys)} requests of {len(counts)} blocks, {once} read once")
