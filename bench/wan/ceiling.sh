#!/usr/bin/env bash
# bench/wan/ceiling.sh: what plain TCP reaches on the testbed's all-to-all,
# without an MPI library in the timed part (bench/wan/raw_alltoall.c), as a
# ceiling for the MPI_Alltoall rows of bench/wan/RESULTS.md.
#
#   sudo bash bench/wan/ceiling.sh [--delays 0,5] [--sizes 4k,8k,...]
#
# For every one-way delay it brings up the same grid as bench/wan/run.py
# (2x4 hosts, 100 Mbit/s, 40-packet queue, cubic), then runs raw_alltoall
# at every size twice: every WAN connection paced at 0.95 x 100 Mbit/s / 16
# flows with a 5 ms minimum RTO (what GridMPI's alltoall sets), and
# unpaced with the kernel's defaults. Prints one markdown table per delay:
# median time per call over 5 reps and the share of the bottleneck used.
# Needs `make build` first; takes about 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=$(pwd)/build
delays=0,5
sizes=4k,8k,16k,32k,64k,128k,256k,512k,1m
while [ $# -gt 0 ]; do
    case $1 in
        --delays) delays=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        *) echo "usage: $0 [--delays 0,5] [--sizes 4k,16k,...]" >&2; exit 2 ;;
    esac
done
[ -x "$B/bin/mpicc" ] || { echo "ceiling: run make build first" >&2; exit 1; }
if "$B/bin/gridmpi-testbed" status >/dev/null 2>&1; then
    echo "ceiling: a grid is already up (someone else's run?); gridmpi-testbed down first" >&2
    exit 1
fi
work=$(mktemp -d /tmp/gridmpi-ceiling.XXXXXX)
trap '"$B/bin/gridmpi-testbed" down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$B/bin/mpicc" -O2 -Wall -o "$work/raw_alltoall" bench/wan/raw_alltoall.c
bytes() { # 4k -> 4096
    local v=${1,,}
    case $v in
        *k) echo $(( ${v%k} * 1024 )) ;;
        *m) echo $(( ${v%m} * 1048576 )) ;;
        *) echo "$v" ;;
    esac
}
pace=$(( 100000000 / 8 * 95 / 100 / 16 ))
hosts=h0,h1,h2,h3,h4,h5,h6,h7
echo "# plain TCP all-to-all on the testbed ($(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD))"
for d in ${delays//,/ }; do
    "$B/bin/gridmpi-testbed" down >/dev/null 2>&1 || true # ours, from the delay before
    "$B/bin/gridmpi-testbed" up 2x4 --rate 100mbit --delay "${d}ms" --queue 40p --cc cubic >/dev/null
    echo
    echo "## ${d} ms one-way delay"
    echo
    echo "| size per peer | paced: ms per call | paced: share | unpaced: ms per call | unpaced: share |"
    echo "|---|---|---|---|---|"
    for s in ${sizes//,/ }; do
        n=$(bytes "$s")
        row="| $s "
        for mode in paced unpaced; do
            args=(--size "$n" --reps 5 --rep-ms 1000)
            [ $mode = paced ] && args+=(--pace "$pace" --rto-min-us 5000)
            out=$("$B/bin/gridmpi-testbed" exec h0 -- "$B/bin/gridmpirun" --launcher /run/gridmpi-testbed/bin/gridmpi-testbed-ssh \
                -hosts $hosts -n 8 "$work/raw_alltoall" "${args[@]}" 2>&1) || { echo "$out" >&2; exit 1; }
            grep -q "^CHECK ok" <<<"$out" || { echo "$out" >&2; exit 1; }
            row+=$(grep "^RESULT" <<<"$out" | python3 -c '
import sys, statistics
t = statistics.median(float(w.split("=")[1]) for l in sys.stdin for w in l.split() if w.startswith("time="))
n = int(sys.argv[1])
print("| %.2f | %.0f%% " % (t * 1e3, 100 * 16 * n * 8 / 1e8 / t), end="")' "$n")
        done
        echo "$row|"
    done
done
