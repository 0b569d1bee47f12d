"""Sampling for the bench's generated traces (the one Zipf sampler they share)."""
import bisect


def zipf_sampler(objects, alpha, rng):
    """A function that draws ranks 0..objects-1 with Zipf(alpha) popularity from `rng`."""
    weights = [1 / (rank + 1) ** alpha for rank in range(objects)]
    total = sum(weights)
    cumulative, running = [], 0.0
    for weight in weights:
        running += weight / total
        cumulative.append(running)
    return lambda: min(bisect.bisect(cumulative, rng.random()), objects - 1)
