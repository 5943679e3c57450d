#!/usr/bin/env bash
# Relays against direct connections on the emulated WAN (issue 16): two
# clusters of 4 hosts, 100 Mbit/s, 5 ms one way, 100-packet queue. First
# with every host reachable (direct connections), then with both sites
# private (tests/testbed/private.toml: only the gateways h0 and h4 are
# reachable) and a relay on each gateway, so every connection between the
# sites goes rank -> relay -> relay -> rank. Measured each time:
#   - 2 ranks, h1 (site A) and h5 (site B): streaming bandwidth and
#     latency (bench/p2p.c, 1 MiB and 4 MiB; 8 B latency);
#   - 8 ranks, h0-h7: the IS-like kernel (bench/wan/is_sort.c).
# Prints a Markdown table. MPICH and Open MPI have no relays: across the
# private sites they cannot run at all, so they are not in it.
#
#   sudo bash bench/wan/relay.sh         # about 3 minutes
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TB=$ROOT/build/bin/gridmpi-testbed
RUN=$ROOT/build/bin/gridmpirun
AGENT=/run/gridmpi-testbed/bin/gridmpi-testbed-ssh
WORK=$(mktemp -d /tmp/gridmpi-relay-bench.XXXXXX)
RELAYS=()
cleanup() {
    for p in "${RELAYS[@]}"; do kill "$p" 2>/dev/null; done
    "$TB" down >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
"$ROOT/build/bin/mpicc" -O2 -I"$ROOT/bench" -o "$WORK/p2p" "$ROOT/bench/p2p.c" -lm
"$ROOT/build/bin/mpicc" -O2 -o "$WORK/is_sort" "$ROOT/bench/wan/is_sort.c" -lm
KEY=$WORK/job-secret
"$RUN" --rendezvous-server 127.0.0.1:0 --groups 1 --secret-file "$KEY" --address-file "$WORK/x" >/dev/null 2>&1 &
sleep 0.5; kill $! 2>/dev/null   # only to create the secret file (mode 600)

# p2p bandwidth and latency between h1 and h5; $1 $2: GRIDMPI_RELAY of each.
p2p() {
    "$TB" exec h0 -- "$RUN" --launcher "$AGENT" -hosts h1,h5 --secret-file "$KEY" \
        -n 1 -env GRIDMPI_CLUSTER A -env GRIDMPI_RELAY "$1" "$WORK/p2p" --only latency,bandwidth --sizes 8,1048576,4194304 : \
        -n 1 -env GRIDMPI_CLUSTER B -env GRIDMPI_RELAY "$2" "$WORK/p2p" --only latency,bandwidth --sizes 8,1048576,4194304
}
is() {
    "$TB" exec h0 -- "$RUN" --launcher "$AGENT" -hosts h0,h1,h2,h3,h4,h5,h6,h7 --secret-file "$KEY" \
        -n 4 -env GRIDMPI_CLUSTER A -env GRIDMPI_RELAY "$1" "$WORK/is_sort" --keys-log2 22 --iters 3 --reps 5 : \
        -n 4 -env GRIDMPI_CLUSTER B -env GRIDMPI_RELAY "$2" "$WORK/is_sort" --keys-log2 22 --iters 3 --reps 5
}
value() { # file bench size -> median
    awk -v b="bench=$2" -v s="size=$3" '$1=="RESULT" && $2==b && index($0, " " s " ") {for(i=1;i<=NF;i++) if ($i ~ /^med=/) {sub("med=","",$i); print $i}}' "$1" | head -1
}
is_ms() { grep -o 'med_ms=[0-9.]*' "$1" | head -1 | cut -d= -f2; }

"$TB" up 2x4 --rate 100mbit --delay 5ms --queue 100p --cc cubic >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log"; exit 1; }
p2p "" "" >"$WORK/direct-p2p.out" 2>&1
is "" "" >"$WORK/direct-is.out" 2>&1
"$TB" down >/dev/null 2>&1

"$TB" up "$ROOT/tests/testbed/private.toml" >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log"; exit 1; }
for gw in h0 h4; do
    "$TB" exec $gw -- "$RUN" --relay 0.0.0.0:0 --secret-file "$KEY" --address-file "$WORK/relay-$gw" >"$WORK/relay-$gw.out" 2>&1 &
    RELAYS+=($!)
done
for i in $(seq 100); do [ -s "$WORK/relay-h0" ] && [ -s "$WORK/relay-h4" ] && break; sleep 0.1; done
ra="h0:$(sed 's/.*://' "$WORK/relay-h0")" rb="h4:$(sed 's/.*://' "$WORK/relay-h4")"
p2p "$ra" "$rb" >"$WORK/relay-p2p.out" 2>&1
is "$ra" "$rb" >"$WORK/relay-is.out" 2>&1

echo "Load: $(uptime)"
echo
echo "| measure | direct | through two relays | relayed / direct |"
echo "|---|---|---|---|"
row() { # name direct relayed higher-is-better
    local r="n/a"
    if [ -n "$2" ] && [ -n "$3" ]; then r=$(python3 -c "print('%.2f' % ($3 / $2))"); fi
    echo "| $1 | ${2:-FAIL} | ${3:-FAIL} | $r |"
}
row "p2p bandwidth 1 MiB (MB/s)" "$(value "$WORK/direct-p2p.out" bandwidth 1048576)" "$(value "$WORK/relay-p2p.out" bandwidth 1048576)"
row "p2p bandwidth 4 MiB (MB/s)" "$(value "$WORK/direct-p2p.out" bandwidth 4194304)" "$(value "$WORK/relay-p2p.out" bandwidth 4194304)"
row "p2p latency 8 B (us)" "$(value "$WORK/direct-p2p.out" latency 8)" "$(value "$WORK/relay-p2p.out" latency 8)"
row "IS-like kernel, 8 ranks, 2^22 keys (ms per iteration)" "$(is_ms "$WORK/direct-is.out")" "$(is_ms "$WORK/relay-is.out")"
for f in direct-p2p direct-is relay-p2p relay-is; do
    grep -q "RESULT" "$WORK/$f.out" || { echo; echo "$f failed:"; tail -5 "$WORK/$f.out"; }
done
