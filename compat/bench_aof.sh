#!/bin/sh
# SET at P1 and P16 with the AOF on, side by side with redis-server (same flags,
# each server in its own dir on the same disk): appendfsync everysec, then always.
# The disk's fsync time varies from one second to the next on a shared machine:
# 9 rounds by default, and compare the paired per-round ratios ("rounds" column).
# Usage: compat/bench_aof.sh [extra compat/bench.py flags, e.g. --no-build -n 50000]
set -e
cd "$(dirname "$0")/.."
for policy in everysec always; do
    echo "== appendonly yes, appendfsync $policy"
    python3 compat/bench.py --tests set -P 1,16 --rounds 9 \
        --server-args "--appendonly yes --appendfsync $policy" "$@"
done
