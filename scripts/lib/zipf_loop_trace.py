#!/usr/bin/env python3
"""A unit-size trace for `cachefs replay --objects` (KEY,1), fixed seed.

Half the requests draw from Zipf 1.1 over 10,000 keys, half walk a loop of 1,200 keys (1.2x a
pool of 1,000 files), interleaved at random: 200,000 requests. Where W-TinyLFU's admission
shows (a loop that LRU never hits beside keys worth keeping).

Usage: zipf_loop_trace.py OUT.csv
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_sampling import zipf_sampler  # noqa: E402

rng = random.Random(7)
objects, pool, requests = 10000, 1000, 200000
draw = zipf_sampler(objects, 1.1, rng)
loop = int(pool * 1.2)
position = 0
with open(sys.argv[1], "w") as out:
    for _ in range(requests):
        if rng.random() < 0.5:
            out.write(f"z{draw()},1\n")
        else:
            out.write(f"l{position % loop},1\n")
            position += 1
