#!/bin/bash
# ACL user cost: one oxidis-server, redis-benchmark as the default user and as a restricted
# user (~key:* -@all +get +set) in alternating rounds; prints the paired user/default
# throughput ratio per workload (median [min..max]).
#   sh compat/bench_acluser.sh [BIN] [ROUNDS]      (default: target/release/oxidis-server, 7)
# The server runs on CPU 0 and redis-benchmark on CPU 1 (taskset).
BIN=${1:-target/release/oxidis-server}; R=${2:-7}; PORT=${PORT:-23450}
D=$(mktemp -d); OUT=$D/rounds.txt
taskset -c 0 "$BIN" --port $PORT --save "" --appendonly no --dir "$D" >/dev/null 2>&1 &
SP=$!
for i in $(seq 100); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-cli -p $PORT ACL SETUSER u on '>pw' '~key:*' -@all +get +set >/dev/null
for P in 1 16; do for T in set get; do
  for i in $(seq "$R"); do
    for who in default user; do
      EXTRA=""; [ $who = user ] && EXTRA="--user u -a pw"
      rps=$(taskset -c 1 redis-benchmark -p $PORT -n 200000 -c 50 -P $P -t $T -r 100000 --csv $EXTRA 2>/dev/null \
            | tail -1 | cut -d, -f2 | tr -d '"')
      echo "P$P $T $who $rps" >> "$OUT"
    done
  done
done; done
kill $SP; wait $SP 2>/dev/null
python3 - "$OUT" <<'PY'
import collections, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
pairs = collections.defaultdict(list)
for d, u in zip(rows[0::2], rows[1::2]):
    pairs[d[0] + " " + d[1].upper()].append(float(u[3]) / float(d[3]))
for k, v in pairs.items():
    print("%-8s user/default paired median %.3f [%.3f..%.3f] over %d rounds" % (k, statistics.median(v), min(v), max(v), len(v)))
PY
rm -rf "$D"
