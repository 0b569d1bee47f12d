"""The bench's workloads, one module per section of the table. Each workload
runs its mount side, then its direct side, records both and logs a progress line."""
