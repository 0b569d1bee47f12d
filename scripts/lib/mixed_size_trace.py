#!/usr/bin/env python3
"""A mixed-size trace for `cachefs replay` (KEY,SIZE,OP,COST), fixed seed.

Zipf 0.9 over 20,000 files, lognormal sizes (median 64 KiB, sigma 2, clipped to 1 KiB..256 MiB),
150,000 reads; a miss costs 5 ms + a lognormal latency (median 40 ms, independent of the size)
+ the size at 50 MB/s.

Usage: mixed_size_trace.py OUT.csv
"""
import bisect
import math
import random
import sys

if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
    print(__doc__, file=sys.stderr)
    sys.exit(0 if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else 2)

rng = random.Random(29)
objects, requests = 20000, 150000
weights = [1 / (rank + 1) ** 0.9 for rank in range(objects)]
total = sum(weights)
cumulative = []
running = 0.0
for weight in weights:
    running += weight / total
    cumulative.append(running)
sizes = [int(min(256 << 20, max(1024, rng.lognormvariate(math.log(65536), 2.0)))) for _ in range(objects)]
costs = [5 + rng.lognormvariate(math.log(40), 1.0) + size / 50e6 * 1000 for size in sizes]
with open(sys.argv[1], "w") as out:
    out.write("key,size,op,cost\n")
    for _ in range(requests):
        key = min(bisect.bisect(cumulative, rng.random()), objects - 1)
        out.write(f"k{key},{sizes[key]},get,{costs[key]:.1f}\n")
print(f"{sum(sizes) / 2**30:.1f} GiB in {objects} files")
