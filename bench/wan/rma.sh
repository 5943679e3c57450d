#!/usr/bin/env bash
# One-sided communication across the WAN: bench/rma.c (put/get latency and
# bandwidth, accumulate rate, fetch-and-op, lock/put/unlock in a
# passive-target epoch) with 2 ranks, the origin on h0 and the target on h4
# of the testbed's 2x4 grid (a 100 Mbit/s WAN, 5 ms each way, a
# 100-packet queue), GridMPI, MPICH and Open MPI one after the other in
# one run. Prints each MPI's RESULT lines and a table of medians.
#
#   flock /tmp/testbed.lock bash bench/wan/rma.sh [REPS]   # default 3
#
# Root, after `make build`; MPICH and Open MPI under /opt/peers (see
# bench/README.md). The grid is brought up and always taken down.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TB=$ROOT/build/bin/gridmpi-testbed
AGENT=/run/gridmpi-testbed/bin/gridmpi-testbed-ssh
MPICH=${BENCH_MPICH_PREFIX:-/opt/peers/mpich}
OMPI=${BENCH_OPENMPI_PREFIX:-/opt/peers/openmpi}
REPS=${1:-3}
WORK=$(mktemp -d /tmp/gridmpi-rma-wan.XXXXXX)
trap '"$TB" down >/dev/null 2>&1; rm -rf "$WORK"' EXIT
for impl in gridmpi mpich openmpi; do
    case $impl in
        gridmpi) cc=$ROOT/build/bin/mpicc ;;
        mpich) cc=$MPICH/bin/mpicc ;;
        openmpi) cc=$OMPI/bin/mpicc ;;
    esac
    "$cc" -O2 -I"$ROOT/bench" -o "$WORK/rma-$impl" "$ROOT/bench/rma.c" || exit 1
done
"$TB" up 2x4 --delay 5ms >/dev/null || exit 1
"$TB" set c0-c1 rate=100mbit delay=5ms queue=100p >/dev/null
ARGS=(--reps "$REPS" --rep-ms 400 --sizes 8,65536,1048576)
echo "load before: $(uptime)"
for impl in gridmpi mpich openmpi; do
    exe=$WORK/rma-$impl
    case $impl in
        gridmpi) cmd=("$ROOT/build/bin/gridmpirun" --launcher "$AGENT" -hosts h0,h4 -n 2 "$exe" "${ARGS[@]}") ;;
        mpich) cmd=(env MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp "$MPICH/bin/mpiexec" -launcher ssh -launcher-exec "$AGENT"
            -hosts h0,h4 -n 2 "$exe" "${ARGS[@]}") ;;
        openmpi) cmd=("$OMPI/bin/mpirun" --allow-run-as-root --prtemca plm_ssh_agent "$AGENT" --map-by node -H h0,h4 -n 2
            --mca btl tcp,self --mca pml ob1 "$exe" "${ARGS[@]}") ;;
    esac
    "$TB" exec h0 -- timeout 900 "${cmd[@]}" >"$WORK/$impl.out" 2>&1
    echo "== $impl (exit $?)"
    sed "s/^/$impl /" "$WORK/$impl.out" | grep -E ' (RESULT|ERROR)' | tee -a "$WORK/all"
done
echo "load after: $(uptime)"
python3 - "$WORK/all" <<'PY'
import sys
rows, impls = {}, ["gridmpi", "mpich", "openmpi"]
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) < 2 or parts[1] != "RESULT":
        continue
    d = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
    rows.setdefault((d["bench"], int(d["size"]), d["unit"]), {})[parts[0]] = float(d["med"])
print("\n| benchmark | size | unit | " + " | ".join(impls) + " | GridMPI / best peer |")
print("|---|---|---|---|---|---|---|")
for (bench, size, unit), v in sorted(rows.items()):
    peers = [v[i] for i in impls[1:] if i in v]
    ratio = ""
    if "gridmpi" in v and peers:
        best = min(peers) if unit == "us" else max(peers)
        ratio = "%.2f" % (v["gridmpi"] / best)
    cells = " | ".join("%.4g" % v[i] if i in v else "-" for i in impls)
    print(f"| {bench} | {size} | {unit} | {cells} | {ratio} |")
PY
