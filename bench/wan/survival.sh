#!/usr/bin/env bash
# Survival on the emulated WAN (issue 14): an all-to-all + allreduce loop
# whose every byte is checked (tests/testbed/outage.c), 8 ranks on 2
# clusters x 4 hosts, 100 Mbit/s, 5 ms one way, 100-packet queue, through
#   1. a WAN cut of CUT seconds (default 600),
#   2. RESETS rounds of `ss -K` on the WAN connections of a host of
#      cluster 0 (default 20, spread over a 120 s run),
#   3. LOSS random loss (default 5%) for 60 s,
# and the same resets and a 60 s cut under MPICH and Open MPI (their TCP
# transports), for comparison. Prints a Markdown table; stall = the longest
# time one iteration took.
#
#   sudo bash bench/wan/survival.sh            # about 20 minutes
#   CUT=60 RESETS=10 PEERS= bash bench/wan/survival.sh   # shorter, GridMPI only
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TB=$ROOT/build/bin/gridmpi-testbed
AGENT=/run/gridmpi-testbed/bin/gridmpi-testbed-ssh
HOSTS=h0,h1,h2,h3,h4,h5,h6,h7
CUT=${CUT:-600}
RESETS=${RESETS:-20}
LOSS=${LOSS:-5%}
PEERS=${PEERS-mpich openmpi}
MPICH=${MPICH_PREFIX:-/opt/peers/mpich}
OMPI=${OMPI_PREFIX:-/opt/peers/openmpi}
WORK=$(mktemp -d /tmp/gridmpi-survival.XXXXXX)
trap '"$TB" down >/dev/null 2>&1' EXIT

"$TB" up 2x4 --rate 100mbit --delay 5ms --queue 100p --cc cubic >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log"; exit 1; }
"$ROOT/build/bin/mpicc" -O2 -o "$WORK/outage-gridmpi" "$ROOT/tests/testbed/outage.c"
[ -x "$MPICH/bin/mpicc" ] && "$MPICH/bin/mpicc" -O2 -o "$WORK/outage-mpich" "$ROOT/tests/testbed/outage.c"
[ -x "$OMPI/bin/mpicc" ] && "$OMPI/bin/mpicc" -O2 -o "$WORK/outage-openmpi" "$ROOT/tests/testbed/outage.c"

launch() { # impl seconds bytes -> command line run in h0
    case $1 in
        gridmpi) echo "$ROOT/build/bin/gridmpirun --launcher $AGENT -hosts $HOSTS -n 8 $WORK/outage-gridmpi $2 $3" ;;
        mpich) echo "env FI_PROVIDER=tcp MPIR_CVAR_CH4_NETMOD=ofi $MPICH/bin/mpiexec -launcher ssh -launcher-exec $AGENT -hosts $HOSTS -n 8 $WORK/outage-mpich $2 $3" ;;
        openmpi) echo "$OMPI/bin/mpirun --allow-run-as-root --prtemca plm_ssh_agent $AGENT --map-by node -H $HOSTS -n 8 --mca btl tcp,self --mca pml ob1 $WORK/outage-openmpi $2 $3" ;;
    esac
}

row() { # impl what out rc start end
    local result
    result=$(grep -a -o 'outage: .*' "$3" | head -1)
    [ -z "$result" ] && result="died: $(grep -a -v 'a new one took over\|WAN link' "$3" | grep -a -i -m1 'error\|fail\|abort\|timed out\|reset\|closed' | cut -c1-150)"
    printf '| %s | %s | %s | %s | %.0f s |\n' "$1" "$2" "$4" "$result" "$(echo "$6 - $5" | bc)"
}

cut_run() { # impl seconds-of-cut
    local out=$WORK/cut-$1-$2.out start end rc
    start=$(date +%s.%N)
    "$TB" exec h0 -- timeout $(( $2 + 240 )) $(launch "$1" $(( $2 + 30 )) 4096) >"$out" 2>&1 &
    local job=$!
    sleep 8; "$TB" cut c0-c1 >/dev/null; sleep "$2"; "$TB" restore c0-c1 >/dev/null
    wait $job; rc=$?; end=$(date +%s.%N)
    row "$1" "WAN cut for $2 s" "$out" "$rc" "$start" "$end"
}

reset_run() { # impl rounds
    local out=$WORK/resets-$1.out start end rc gap
    gap=$(echo "scale=2; 110 / $2" | bc)
    start=$(date +%s.%N)
    "$TB" exec h0 -- timeout 300 $(launch "$1" 120 65536) >"$out" 2>&1 &
    local job=$!
    sleep 5
    for i in $(seq 1 "$2"); do "$TB" exec "h$((i % 4))" -- ss -K dst 10.77.1.0/24 >/dev/null 2>&1; sleep "$gap"; done
    wait $job; rc=$?; end=$(date +%s.%N)
    row "$1" "$2 rounds of ss -K (WAN connections of one host each)" "$out" "$rc" "$start" "$end"
    [ "$1" = gridmpi ] && echo "|  | connections re-made: $(awk '/a new one took over/ { n++ } / more connections broke and were re-made/ { for (i = 2; i <= NF; i++) if ($i == "more") n += $(i - 1) } END { print n + 0 }' "$out"); bytes written again: $(grep -o '[0-9]* bytes written again' "$out" | awk '{s+=$1} END {print s+0}') |  |  |  |"
}

loss_run() {
    local out=$WORK/loss.out start end rc
    start=$(date +%s.%N)
    "$TB" exec h0 -- timeout 400 $(launch gridmpi 90 65536) >"$out" 2>&1 &
    local job=$!
    sleep 10; "$TB" set c0-c1 loss="$LOSS" >/dev/null; sleep 60; "$TB" set c0-c1 loss=0% >/dev/null
    wait $job; rc=$?; end=$(date +%s.%N)
    row gridmpi "$LOSS random loss for 60 s" "$out" "$rc" "$start" "$end"
}

echo "Survival run of $(date -u '+%Y-%m-%d %H:%M') UTC, commit $(git -C "$ROOT" rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| MPI | what | exit | the program's verdict (iterations, longest stall) | wall time |"
echo "|---|---|---|---|---|"
cut_run gridmpi "$CUT"
reset_run gridmpi "$RESETS"
loss_run
for impl in $PEERS; do
    [ -x "$WORK/outage-$impl" ] || continue
    reset_run "$impl" "$RESETS"
    cut_run "$impl" 60
done
echo
echo "Outputs: $WORK"
