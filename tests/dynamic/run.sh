#!/bin/bash
# Dynamic processes between separately started jobs (make test-dynamic):
# portpair.c run as two gridmpirun jobs of different sizes, as a singleton
# server with a job of clients, as two singletons (each a world of one,
# started without gridmpirun), and, as root, as a job on each cluster of an
# emulated grid. Spawning is tested by tests/c/dyn_spawn*.c.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/build/bin
work=$(mktemp -d /tmp/gridmpi-dynamic.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$bin/mpicc" -O1 -o "$work/portpair" "$root/tests/dynamic/portpair.c" || exit 1

failed=0
# run NAME SERVER_COUNT CLIENT_COUNT: a count of 0 starts a singleton.
# With $SERVER_HOSTS and $CLIENT_HOSTS set, each job runs on those hosts of
# the emulated grid (started from the first of them).
run() {
    local name=$1 dir=$work/$1
    mkdir -p "$dir"
    start() {
        local hosts=${SERVER_HOSTS:-}
        [ "$2" = client ] && hosts=${CLIENT_HOSTS:-}
        if [ -n "$hosts" ]; then
            timeout 120 "$GRID_TB" exec "${hosts%%,*}" -- "$bin/gridmpirun" \
                --launcher /run/gridmpi-testbed/bin/gridmpi-testbed-ssh -hosts "$hosts" -n "$1" "$work/portpair" "$2" "$dir"
        elif [ "$1" = 0 ]; then
            timeout 120 "$work/portpair" "$2" "$dir"
        else
            timeout 120 "$bin/gridmpirun" -n "$1" "$work/portpair" "$2" "$dir"
        fi
    }
    start "$2" server > "$dir/server.out" 2>&1 &
    local spid=$!
    start "$3" client > "$dir/client.out" 2>&1
    local crc=$?
    wait $spid
    local src=$?
    local want=$(( ($2 > 0 ? $2 : 1) + ($3 > 0 ? $3 : 1) ))
    local ok=$(cat "$dir/server.out" "$dir/client.out" | grep -c '^portpair OK')
    if [ $src -eq 0 ] && [ $crc -eq 0 ] && [ "$ok" -eq "$want" ]; then
        echo "PASS  $name"
    else
        echo "FAIL  $name (server exit $src, client exit $crc, $ok of $want OK)"
        sed 's/^/  server: /' "$dir/server.out" | tail -n 20
        sed 's/^/  client: /' "$dir/client.out" | tail -n 20
        failed=1
    fi
}
run jobs-2-3 2 3
run singleton-server 0 2
run singletons 0 0

# Across clusters: a job on each cluster of an emulated 2x2 grid (WAN
# 20 ms), when we may make one and no other is up.
. "$root/tests/testbed/grid.sh"
up=0
grid_up across-clusters 2x2 --delay 10ms || up=$?
case $up in
0)
    SERVER_HOSTS=h0,h1 CLIENT_HOSTS=h2,h3 run across-clusters 2 2
    grid_down ;;
2) failed=1 ;;
esac
exit $failed
