#!/usr/bin/env bash
# TLS on the WAN (GRIDMPI_WAN_TLS=on against off): an MPI_Alltoall loop
# (bench/wan/wan_coll.c) on the testbed's 2x4 grid, 8 ranks one per host,
# a 100 Mbit/s WAN with 5 ms each way and a 100-packet queue, GridMPI with
# everything on as in run.py's `gridmpi` variant (the cluster map from a
# topology file naming the WAN's bandwidth and delay: tuned, paced WAN
# connections). Jobs with TLS on and off alternate; each job's value is
# wan_coll's median time per call (5 reps of about 1 s). Prints each job
# and a table: median and range over the jobs.
#
#   flock /tmp/testbed.lock bench/wan/tls.sh [JOBS] [SIZES]   # default 5 jobs each; 64k 1m per peer
#
# Root, after `make build`. The grid is brought up and always taken down.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TB=$ROOT/build/bin/gridmpi-testbed
AGENT=/run/gridmpi-testbed/bin/gridmpi-testbed-ssh
JOBS=${1:-5}
SIZES=${2:-"65536 1048576"}
WORK=$(mktemp -d /tmp/gridmpi-tls-wan.XXXXXX)
"$ROOT/build/bin/mpicc" -O2 -I"$ROOT/bench/wan" -o "$WORK/wan_coll" "$ROOT/bench/wan/wan_coll.c" -lm || exit 1
trap '"$TB" down >/dev/null 2>&1; rm -rf "$WORK"' EXIT
cat >"$WORK/topology.txt" <<TOPO
# the testbed grid: gridmpi-testbed up 2x4, WAN 100mbit, 5 ms, 100-packet queue
cluster c0 h0 h1 h2 h3
cluster c1 h4 h5 h6 h7
wan c0 c1 bandwidth=100mbit delay=5ms
TOPO
"$TB" up 2x4 --delay 5ms >/dev/null || exit 1
"$TB" set c0-c1 rate=100mbit delay=5ms queue=100p >/dev/null
echo "load before: $(uptime)"
for size in $SIZES; do
    for i in $(seq "$JOBS"); do
        for mode in off on; do
            out=$("$TB" exec h0 -- env GRIDMPI_TOPOLOGY="$WORK/topology.txt" GRIDMPI_WAN_TLS=$mode timeout 300 \
                "$ROOT/build/bin/gridmpirun" --launcher "$AGENT" -hosts h0,h1,h2,h3,h4,h5,h6,h7 -n 8 \
                "$WORK/wan_coll" --op alltoall --size "$size" --reps 5 --rep-ms 1000 --warmup 3 --max-iters 400 2>&1)
            med=$(grep '^RESULT' <<<"$out" | grep -o 'med_ms=[0-9.]*' | head -1 | cut -d= -f2)
            echo "size=$size mode=$mode job=$i med_ms=${med:-FAIL}" | tee -a "$WORK/results"
            [ -n "$med" ] || echo "$out" | tail -5
        done
    done
done
echo "load after: $(uptime)"
python3 - "$WORK/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    d = dict(x.split("=") for x in line.split())
    if d["med_ms"] != "FAIL":
        rows.setdefault((int(d["size"]), d["mode"]), []).append(float(d["med_ms"]))
print("\n| per peer | GRIDMPI_WAN_TLS | jobs | ms per MPI_Alltoall, median (min-max) | on / off (medians) |")
print("|---|---|---|---|---|")
for size in sorted({s for s, _ in rows}):
    off = rows.get((size, "off"), [])
    for mode in ("off", "on"):
        v = rows.get((size, mode), [])
        if not v:
            continue
        ratio = f"{statistics.median(v) / statistics.median(off):.3f}" if mode == "on" and off else ""
        print(f"| {size // 1024} KiB | {mode} | {len(v)} | {statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f}) | {ratio} |")
PY
