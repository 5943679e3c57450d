#!/bin/bash
# Checkpoint time, restart time and image size for a heap of 16, 256 and
# 1024 MiB, and with 8 idle threads. Images go to ${DIR:-/tmp} (the page
# cache makes these the times of a local disk at memory speed).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REL=$ROOT/target/release
DIR=${DIR:-/tmp}
cc -O2 -pthread -I "$ROOT/crates/checkpoint/include" -o "$DIR/ckpt-bench" "$ROOT/tests/checkpoint/bench.c" \
    -L "$REL" -lgridmpi_checkpoint -Wl,-rpath,"$REL"
printf '%-22s %14s %12s %14s %10s\n' case checkpoint restart "image (bytes)" "on disk"
for c in "16 0" "256 0" "1024 0" "16 8"; do
    set -- $c
    img=$DIR/ckpt-bench.img
    rm -f "$img"
    ck=$("$DIR/ckpt-bench" "$img" "$1" "$2" | sed -n 's/checkpoint: //p')
    t0=$(date +%s.%N)
    out=$("$REL/gridmpi-restore" "$img")
    t1=$(date +%s.%N)
    [ "$out" = "restarted ok" ] || { echo "bench: the restart said: $out" >&2; exit 1; }
    printf '%-22s %14s %9.1f ms %14s %10s\n' "$1 MiB, $2 threads" "$ck" "$(echo "($t1 - $t0) * 1000" | bc)" \
        "$(stat -c %s "$img")" "$(du -h "$img" | cut -f1)"
    rm -f "$img"
done
