#!/usr/bin/env python3
"""A CDN-like trace of mixed sizes where most requests are first requests (KEY,SIZE,OP,COST), fixed seed.

Each request is, with probability 0.58, the first request of a new object whose size is lognormal
(median 32 KiB, sigma 1.8, clipped to 1 KiB..7 MiB); otherwise it reads again an object introduced
DEPTH objects ago, DEPTH Pareto-distributed (shape 0.5): recent objects are read again most, old
ones now and then. 100,000 requests of about 58,000 objects (8.4 GiB). Where `tinylfu`'s admission
of newcomers and its window show (issue 43): `scripts/bench --policies` replays it beside
libCacheSim's W-TinyLFU.

Usage: cdn_trace.py OUT.csv
"""
import math
import random
import sys

FIRST_REQUEST_SHARE = 0.58
SEED = 5


def make_trace(requests=100_000, seed=SEED, first_share=FIRST_REQUEST_SHARE, median=32 << 10, sigma=1.8,
               depth_shape=0.5):
    """A list of (key, size, cost); cost 0 (the trace is for hit ratios, not costs)."""
    rng = random.Random(seed)
    sizes, keys = [], []
    for _ in range(requests):
        if not sizes or rng.random() < first_share:
            key = len(sizes)
            sizes.append(int(min(7 << 20, max(1024, rng.lognormvariate(math.log(median), sigma)))))
        else:
            key = max(0, len(sizes) - int(rng.paretovariate(depth_shape)))
        keys.append(key)
    return [(f"c{key}", sizes[key], 0.0) for key in keys]


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(0 if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else 2)
    trace = make_trace()
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write("key,size,op,cost\n")
        out.write("".join(f"{key},{size},get,0\n" for key, size, _ in trace))
    first = len({key for key, _, _ in trace})
    print(f"{len(trace)} requests, {first / len(trace):.0%} of them first requests")
