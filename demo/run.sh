#!/usr/bin/env bash
# The main demo (`make demo`).
#
# 1. An MPI program run by gridmpirun on this machine: 4 ranks over shared
#    memory, then forced onto TCP.
# 2. As root: an emulated grid (gridmpi-testbed) of two clusters of four
#    hosts joined by a WAN link of 100 Mbit/s, 5 ms one-way delay and a
#    100-packet drop-tail queue at the bottleneck. The same program
#    (examples/exchange.c: an all-to-all exchange and a 1 MiB allreduce)
#    runs on 8 ranks under GridMPI and under MPICH (pip's, if installed),
#    and the demo prints, side by side, the time per call, the packets the
#    bottleneck dropped, TCP retransmissions and retransmission timeouts.
#    Plots go to demo/out/: the WAN link per millisecond (throughput, queue,
#    drops) for each MPI, and GridMPI's per-connection TCP history.
# 3. As root: the WAN connections are reset twice (ss -K, as a NAT or
#    firewall losing its state) while the program runs, under GridMPI and
#    under MPICH.
# 4. As root: two sites whose hosts cannot be reached from the other
#    (only the gateways cross the WAN): each site starts its ranks with its
#    own gridmpirun, they meet at a rendezvous and talk through a relay on
#    each gateway; MPICH's one mpiexec for both sites cannot run there.
#
# DEMO_OUT=DIR puts the outputs elsewhere; DEMO_LOCAL_ONLY=1 skips part 2.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
B=$ROOT/build
OUT=${DEMO_OUT:-$ROOT/demo/out}
MPICH=${MPICH_PREFIX:-/opt/peers/mpich}
mkdir -p "$B/examples" "$OUT"

echo "== part 1: gridmpirun on this machine"
"$B/bin/mpicc" -O2 -o "$B/examples/pi" examples/pi.c
echo "-- 4 ranks, shared memory"
"$B/bin/gridmpirun" -n 4 "$B/examples/pi"
echo "-- 4 ranks forced onto TCP"
"$B/bin/gridmpirun" -n 4 -genv GRIDMPI_TRANSPORT tcp "$B/examples/pi"

TB=$B/bin/gridmpi-testbed
if [ -n "${DEMO_LOCAL_ONLY:-}" ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! "$TB" check >/dev/null 2>&1; then
    echo
    echo "== part 2 (the emulated grid) skipped: it needs root and network namespaces."
    echo "   Run 'sudo make demo', or 'gridmpi-testbed check' to see what is missing."
    exit 0
fi

echo
echo "== part 2: two clusters joined by a WAN (gridmpi-testbed)"
RATE=100mbit DELAY=5ms QUEUE=100p
SIZE=${DEMO_SIZE:-262144} CALLS=${DEMO_CALLS:-8}
"$TB" down --force >/dev/null 2>&1 || true
"$TB" up 2x4 --rate $RATE --delay $DELAY --queue $QUEUE --cc cubic | sed -n '1,/^$/p'
trap '"$TB" down >/dev/null 2>&1 || true' EXIT
AGENT=/run/gridmpi-testbed/bin/gridmpi-testbed-ssh
HOSTS=h0,h1,h2,h3,h4,h5,h6,h7
cat >"$OUT/grid.topo" <<EOF
cluster c0 h0 h1 h2 h3
cluster c1 h4 h5 h6 h7
wan c0 c1 bandwidth=$RATE delay=$DELAY
EOF

# TCP counters summed over the grid's hosts: retransmitted segments and
# retransmission timeouts (each host is a network namespace with its own).
tcp_counters() {
    for h in h0 h1 h2 h3 h4 h5 h6 h7; do
        "$TB" exec "$h" -- cat /proc/net/snmp /proc/net/netstat
    done | python3 -c '
import sys
retrans = timeouts = 0
lines = sys.stdin.read().splitlines()
for names, values in zip(lines, lines[1:]):
    n, v = names.split(), values.split()
    if n[0] != v[0] or n == v:
        continue
    row = dict(zip(n[1:], v[1:]))
    retrans += int(row.get("RetransSegs", 0))
    timeouts += int(row.get("TCPTimeouts", 0))
print(retrans, timeouts)'
}

# run NAME TITLE CMD...: run CMD as host h0 under the link monitor; keep its
# output, and the WAN drops and TCP counters it caused, in $OUT/NAME.*
run() {
    local name=$1 title=$2
    shift 2
    local before after
    before=$(tcp_counters)
    "$TB" status --reset >/dev/null
    "$TB" monitor -o "$OUT/$name.csv" --title "$title" -- "$TB" exec h0 -- "$@" | tee "$OUT/$name.txt"
    after=$(tcp_counters)
    "$TB" status --json >"$OUT/$name.status.json"
    python3 - "$OUT/$name.status.json" "$before" "$after" >"$OUT/$name.counters" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
drops = sum(x["counters"]["drops"] for x in d["emulator"]["dirs"])
b, a = [list(map(int, s.split())) for s in sys.argv[2:4]]
print(drops, a[0] - b[0], a[1] - b[1])
EOF
}

"$B/bin/mpicc" -O2 -o "$B/examples/exchange" examples/exchange.c
TITLE="on 2x4 hosts, WAN $RATE, $DELAY one-way, $QUEUE queue"
echo "-- GridMPI: gridmpirun --topology (the cluster map) --trace (TCP history)"
rm -rf "$OUT/trace"
run gridmpi "GridMPI: all-to-all and allreduce $TITLE" \
    "$B/bin/gridmpirun" --launcher "$AGENT" -hosts $HOSTS -n 8 --topology "$OUT/grid.topo" --trace "$OUT/trace" \
    "$B/examples/exchange" "$SIZE" "$CALLS"
NAMES=(gridmpi)
if [ -x "$MPICH/bin/mpicc" ]; then
    echo "-- MPICH: mpiexec with the testbed as its ssh launcher"
    "$MPICH/bin/mpicc" -O2 -o "$B/examples/exchange-mpich" examples/exchange.c
    run mpich "MPICH: all-to-all and allreduce $TITLE" \
        env MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp \
        "$MPICH/bin/mpiexec" -launcher ssh -launcher-exec "$AGENT" -hosts $HOSTS -n 8 \
        "$B/examples/exchange-mpich" "$SIZE" "$CALLS"
    NAMES+=(mpich)
else
    echo "-- MPICH not found at $MPICH (bash .ci/install-deps.sh installs it): GridMPI alone"
fi

echo
echo "== the grid, side by side (8 ranks; $((SIZE / 1024)) KiB per pair; $CALLS calls each)"
python3 - "$OUT" "${NAMES[@]}" <<'EOF'
import re, sys
out, names = sys.argv[1], sys.argv[2:]
rows = {}
for n in names:
    text = open(f"{out}/{n}.txt").read()
    times = re.findall(r"^(MPI_\w+).*?median\s+([\d.]+) ms.*?(data ok|DATA WRONG)", text, re.M)
    drops, retrans, rtos = open(f"{out}/{n}.counters").read().split()
    rows[n] = {f"{op}, median ms per call": f"{t}{'' if ok == 'data ok' else ' (WRONG DATA)'}" for op, t, ok in times}
    rows[n].update({"packets dropped at the WAN bottleneck": drops, "TCP segments retransmitted": retrans,
                    "TCP retransmission timeouts": rtos})
label = {"gridmpi": "GridMPI", "mpich": "MPICH"}
keys = list(dict.fromkeys(k for r in rows.values() for k in r))
w = max(map(len, keys))
print(" " * w + "".join(f"{label[n]:>12}" for n in names))
for k in keys:
    print(f"{k:<{w}}" + "".join(f"{rows[n].get(k, '-'):>12}" for n in names))
EOF
echo
echo "GridMPI's TCP connections (gridmpi-trace summary, connections that crossed the WAN first):"
"$B/bin/gridmpi-trace" summary "$OUT/trace" | sed -n 1,30p  # sed reads it all: no broken pipe under pipefail
"$B/bin/gridmpi-trace" report "$OUT/trace" -o "$OUT/trace.html" --title "GridMPI TCP history, $TITLE" >/dev/null
echo
echo "== part 3: a firewall resets the WAN connections twice during a run"
# ss -K in hosts of cluster c0 aborts their connections to c1, as a NAT or
# firewall that loses its state does: the peers see a reset.
resets() { sleep 2; "$TB" exec h0 -- ss -K dst 10.77.1.0/24 >/dev/null 2>&1; sleep 2; "$TB" exec h1 -- ss -K dst 10.77.1.0/24 >/dev/null 2>&1; }
resets &
"$TB" exec h0 -- timeout 120 "$B/bin/gridmpirun" --launcher "$AGENT" -hosts $HOSTS -n 8 --topology "$OUT/grid.topo" \
    "$B/examples/exchange" 262144 20 >"$OUT/resets-gridmpi.txt" 2>&1 || true
wait
echo "GridMPI: $(awk '/a new one took over/ { n++ } / more connections broke and were re-made/ { for (i = 2; i <= NF; i++) if ($i == "more") n += $(i - 1) } END { print n + 0 }' "$OUT/resets-gridmpi.txt") connections re-made, e.g."
{ grep -m1 'a new one took over' "$OUT/resets-gridmpi.txt" || true; } | sed 's/^/    /'
{ grep '^MPI_' "$OUT/resets-gridmpi.txt" || echo "(no result: see $OUT/resets-gridmpi.txt)"; } | sed 's/^/    /'
if [ -x "$B/examples/exchange-mpich" ]; then
    resets &
    "$TB" exec h0 -- timeout 60 env MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp \
        "$MPICH/bin/mpiexec" -launcher ssh -launcher-exec "$AGENT" -hosts $HOSTS -n 8 \
        "$B/examples/exchange-mpich" 262144 20 >"$OUT/resets-mpich.txt" 2>&1 && mpich_rc=0 || mpich_rc=$?
    wait
    echo "MPICH (exit code $mpich_rc; the resets hit its MPI connections and hydra's own link to its proxies):"
    { grep '^MPI_' "$OUT/resets-mpich.txt" || grep -a -i -m2 'error\|abort' "$OUT/resets-mpich.txt" || true; } | cut -c1-160 | sed 's/^/    /'
fi

echo
echo "== part 4: two sites that cannot see each other"
# Both clusters' hosts have private addresses: only the gateways h0 and h4
# cross the WAN (tests/testbed/private.toml). Each site starts its own
# ranks with its own gridmpirun; they meet at a rendezvous on h0, and every
# connection between the sites goes through a relay on each gateway.
"$TB" down >/dev/null 2>&1 || true
"$TB" up "$ROOT/tests/testbed/private.toml" | sed -n '1,/^$/p'
KEYDIR=$(mktemp -d)
SECRET=$KEYDIR/job-secret
python3 -c 'import os, sys; open(sys.argv[1], "w").write(os.urandom(32).hex() + "\n")' "$SECRET"
chmod 600 "$SECRET"
PIDS=()
for gw in h0 h4; do
    "$TB" exec $gw -- env GRIDMPI_DEBUG=relay "$B/bin/gridmpirun" --relay 0.0.0.0:0 --secret-file "$SECRET" \
        --address-file "$KEYDIR/relay-$gw" >"$OUT/relay-$gw.txt" 2>&1 &
    PIDS+=($!)
done
"$TB" exec h0 -- timeout 120 "$B/bin/gridmpirun" --rendezvous-server 0.0.0.0:0 --groups 2 --secret-file "$SECRET" \
    --address-file "$KEYDIR/rendezvous" >"$OUT/rendezvous.txt" 2>&1 &
PIDS+=($!)
for i in $(seq 100); do [ -s "$KEYDIR/relay-h0" ] && [ -s "$KEYDIR/relay-h4" ] && [ -s "$KEYDIR/rendezvous" ] && break; sleep 0.1; done
port() { sed 's/.*://' "$1"; }
echo "-- site B's gridmpirun (on h4) starts h4-h7, site A's (on h0) h0-h3; rendezvous h0:$(port "$KEYDIR/rendezvous")"
"$TB" exec h4 -- timeout 120 "$B/bin/gridmpirun" --launcher "$AGENT" -hosts h4,h5,h6,h7 -n 4 --secret-file "$SECRET" \
    --rendezvous "h0:$(port "$KEYDIR/rendezvous")" -x GRIDMPI_CLUSTER=siteB -x GRIDMPI_RELAY="h4:$(port "$KEYDIR/relay-h4")" \
    "$B/examples/exchange" 262144 8 >"$OUT/private-siteB.txt" 2>&1 &
site_b=$!
"$TB" exec h0 -- timeout 120 "$B/bin/gridmpirun" --launcher "$AGENT" -hosts h0,h1,h2,h3 -n 4 --secret-file "$SECRET" \
    --rendezvous "h0:$(port "$KEYDIR/rendezvous")" -x GRIDMPI_CLUSTER=siteA -x GRIDMPI_RELAY="h0:$(port "$KEYDIR/relay-h0")" \
    "$B/examples/exchange" 262144 8 >"$OUT/private-siteA.txt" 2>&1 || true
wait $site_b || true
echo "GridMPI, one job of 8 ranks from two launchers:"
{ grep '^MPI_' "$OUT/private-siteA.txt" || echo "(no result: see $OUT/private-siteA.txt)"; } | sed 's/^/    /'
echo "    connections carried: relay on h0 $(grep -c relaying "$OUT/relay-h0.txt"), relay on h4 $(grep -c relaying "$OUT/relay-h4.txt")"
kill "${PIDS[@]}" 2>/dev/null || true
wait 2>/dev/null || true
rm -rf "$KEYDIR"
if [ -x "$B/examples/exchange-mpich" ]; then
    "$TB" exec h0 -- timeout 20 env MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp \
        "$MPICH/bin/mpiexec" -launcher ssh -launcher-exec "$AGENT" -hosts $HOSTS -n 8 \
        "$B/examples/exchange-mpich" 262144 8 >"$OUT/private-mpich.txt" 2>&1 && mpich_rc=0 || mpich_rc=$?
    echo "MPICH, one mpiexec for both sites (exit code $mpich_rc$([ $mpich_rc = 124 ] && echo ': stopped after 20 s'); its ranks connect directly, and the sites' hosts cannot reach each other):"
    { grep '^MPI_' "$OUT/private-mpich.txt" || grep -a -i -m2 'error\|abort' "$OUT/private-mpich.txt" || echo "(no result)"; } | cut -c1-160 | sed 's/^/    /'
fi

echo
echo "Plots in $OUT:"
for n in "${NAMES[@]}"; do echo "  $n.svg      the WAN link per millisecond (throughput, queue, drops)"; done
echo "  trace.html   GridMPI's TCP history per connection (cwnd, RTT, retransmissions)"
