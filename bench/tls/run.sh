#!/usr/bin/env bash
# The CPU cost of TLS on links (GRIDMPI_WAN_TLS): 2 ranks on one host over
# TCP (loopback) move GIB GiB from rank 0 to rank 1 (bench/tls/cpu_per_gb.c),
# with every link encrypted (all) and in clear (off), runs interleaved.
# Prints each run and a table: median and range of CPU seconds (user +
# system of both ranks) per GB moved, and of the transfer's wall time.
#
#   bench/tls/run.sh [RUNS] [GIB]      # default 5 runs of 4 GiB each way
#
# After `make build`. Measures, asserts nothing; report `uptime` with it.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${1:-5}
GIB=${2:-4}
WORK=$(mktemp -d /tmp/gridmpi-tls-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$ROOT/build/bin/mpicc" -O2 -o "$WORK/cpu_per_gb" "$ROOT/bench/tls/cpu_per_gb.c"
echo "load before: $(uptime)"
for i in $(seq "$RUNS"); do
    for mode in off all; do
        line=$(GRIDMPI_TRANSPORT=tcp GRIDMPI_WAN_TLS=$mode timeout 600 "$ROOT/build/bin/gridmpirun" -n 2 "$WORK/cpu_per_gb" "$GIB" | grep '^RESULT')
        echo "$mode $line" | tee -a "$WORK/results"
    done
done
echo "load after: $(uptime)"
python3 - "$WORK/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, _, *kv = line.split()
    d = dict(x.split("=") for x in kv)
    rows.setdefault(mode, []).append({k: float(v) for k, v in d.items()})
print("\n| GRIDMPI_WAN_TLS | runs | CPU s per GB, median (min-max) | wall s, median (min-max) | GB/s, median | user s / sys s, median |")
print("|---|---|---|---|---|---|")
for mode in ("off", "all"):
    r = rows.get(mode, [])
    if not r:
        continue
    def col(k):
        v = [x[k] for x in r]
        return statistics.median(v), min(v), max(v)
    c, w = col("cpu_s_per_gb"), col("wall_s")
    gbs = statistics.median(x["gib"] * 2**30 / 1e9 / x["wall_s"] for x in r)
    print(f"| {mode} | {len(r)} | {c[0]:.3f} ({c[1]:.3f}-{c[2]:.3f}) | {w[0]:.2f} ({w[1]:.2f}-{w[2]:.2f}) | {gbs:.2f} | "
          f"{statistics.median(x['user_s'] for x in r):.2f} / {statistics.median(x['sys_s'] for x in r):.2f} |")
    assert all(x["bad"] == 0 for x in r), "wrong data"
if rows.get("off") and rows.get("all"):
    off = statistics.median(x["cpu_s_per_gb"] for x in rows["off"])
    on = statistics.median(x["cpu_s_per_gb"] for x in rows["all"])
    print(f"\nTLS costs {on - off:.3f} CPU s per GB more ({on / off:.2f}x the plain transfer's CPU time).")
PY
