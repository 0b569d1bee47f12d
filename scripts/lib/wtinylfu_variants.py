#!/usr/bin/env python3
"""W-TinyLFU's counting choices, one at a time, on a unit-size trace (an experiment, not the bench).

A plain W-TinyLFU shaped as libCacheSim's (a 1 % window LRU; a segmented main of 99 %,
probation 20 % and protected 80 %; a window victim enters main unchallenged while main has
room, else competes with probation's oldest and the one with the higher estimate stays, a tie
keeping main's), with a count-min sketch of 4 rows as wide as cachefs's (4x the cache,
rounded up to a power of two). Each variant changes one thing from cachefs's counting:
  cachefs            a doorkeeper, counters capped at 15, every request counted (window hits
                     too), halved after 10x the sketch's width increments
  no-doorkeeper      the first request of a name counts in the sketch
  no-window-hits     a hit in the window is not counted
  count-competition  a window victim's count rises at every competition
  decay-main-hits    halved after 32x main's size hits in main
  uncapped           counters without a cap
  libcachesim        all five as libCacheSim 0.3.5's WTinyLFU.c does

Usage: wtinylfu_variants.py TRACE.csv CAPACITY [VARIANT,...]
"""
import random
import sys
from collections import OrderedDict


class Sketch:
    def __init__(self, width, depth=4, cap=15, doorkeeper=True):
        self.width, self.depth, self.cap, self.doorkeeper = width, depth, cap, doorkeeper
        self.counters = [0] * (width * depth)
        self.seen = set()
        self.salts = [random.Random(row).getrandbits(64) for row in range(depth)]

    def slots(self, key):
        return [row * self.width + (hash((key, self.salts[row])) & (self.width - 1)) for row in range(self.depth)]

    def increment(self, key):
        if self.doorkeeper and key not in self.seen:
            self.seen.add(key)
            return
        for slot in self.slots(key):
            if self.cap is None or self.counters[slot] < self.cap:
                self.counters[slot] += 1

    def estimate(self, key):
        least = min(self.counters[slot] for slot in self.slots(key))
        return least + (1 if self.doorkeeper and key in self.seen else 0)

    def halve(self):
        self.counters = [count >> 1 for count in self.counters]
        self.seen.clear()


def hit_ratio(trace, capacity, doorkeeper=True, window_hits=True, count_competition=False,
              decay="increments", cap=15):
    width = 64
    while width < capacity * 4:
        width <<= 1
    sketch = Sketch(width, cap=cap, doorkeeper=doorkeeper)
    window_size = max(1, int(capacity * 0.01))
    main_size = capacity - window_size
    protected_size = int(main_size * 0.8)
    window, probation, protected = OrderedDict(), OrderedDict(), OrderedDict()
    since_halving = 0
    hits = 0

    def count(key, in_main):
        nonlocal since_halving
        sketch.increment(key)
        if decay == "increments" or in_main:
            since_halving += 1
        period = width * 10 if decay == "increments" else 32 * main_size
        if since_halving >= period:
            since_halving = 0
            sketch.halve()

    for key in trace:
        if key in window:
            hits += 1
            window.move_to_end(key)
            if window_hits:
                count(key, False)
        elif key in probation:
            hits += 1
            del probation[key]
            protected[key] = True
            while len(protected) > protected_size:
                demoted, _ = protected.popitem(last=False)
                probation[demoted] = True
            count(key, True)
        elif key in protected:
            hits += 1
            protected.move_to_end(key)
            count(key, True)
        else:
            count(key, False)
            window[key] = True
            while len(window) > window_size:
                candidate, _ = window.popitem(last=False)
                if len(probation) + len(protected) < main_size:
                    probation[candidate] = True
                    continue
                victim = next(iter(probation)) if probation else next(iter(protected))
                if sketch.estimate(candidate) > sketch.estimate(victim):
                    (probation if victim in probation else protected).pop(victim)
                    probation[candidate] = True
                if count_competition:
                    sketch.increment(candidate)
    return hits / len(trace)


VARIANTS = {
    "cachefs": {},
    "no-doorkeeper": dict(doorkeeper=False),
    "no-window-hits": dict(window_hits=False),
    "count-competition": dict(count_competition=True),
    "decay-main-hits": dict(decay="main-hits"),
    "uncapped": dict(cap=None),
    "libcachesim": dict(doorkeeper=False, window_hits=False, count_competition=True, decay="main-hits", cap=None),
}

if __name__ == "__main__":
    keys = [line.split(",", 1)[0] for line in open(sys.argv[1]) if not line.startswith("key,")]
    chosen = sys.argv[3].split(",") if len(sys.argv) > 3 else list(VARIANTS)
    for name in chosen:
        print(f"{name:18s} {hit_ratio(keys, int(sys.argv[2]), **VARIANTS[name]):.3f}", flush=True)
