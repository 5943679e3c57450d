#!/usr/bin/env bash
# Make the report screenshot shown in docs/trace.md and README.md: the
# collective benchmark (bench/coll.c, MPI_Alltoall 4 KiB..256 KiB) traced on
# 4 ranks, 2 on each of two hosts (network namespaces) joined by a link that
# loses LOSS% (default 2) of the TCP packets; the report rendered by headless
# Chromium.
#
#   tests/trace/screenshot.sh [OUT.png]      # default docs/trace-report.png (root)
#   GRIDMPI_BUILD=/path/to/build KEEP=DIR tests/trace/screenshot.sh
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/tests/trace"
BUILD=${GRIDMPI_BUILD:-$ROOT/build}
OUT=${1:-$ROOT/docs/trace-report.png}
LOSS=${LOSS:-2}
WORK=${KEEP:-$(mktemp -d /tmp/gridmpi-trace-shot.XXXXXX)}
mkdir -p "$WORK"
. "$HERE/lossy-link.sh"
why=$(lossy_link_reason)
[ -z "$why" ] || { echo "screenshot.sh: $why" >&2; exit 1; }
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome) || {
    echo "screenshot.sh: needs chromium (apt-get install chromium)" >&2; exit 1; }
trap 'lossy_link_down; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT
lossy_link_up "gtrs$$a" "gtrs$$b" "$LOSS"
"$BUILD/bin/mpicc" -O2 -o "$WORK/coll" "$ROOT/bench/coll.c"
rm -rf "$WORK/trace"
timeout 600 "$BUILD/bin/gridmpirun" -n 4 --launcher "$HERE/nsagent" -hosts "gtrs$$a:2,gtrs$$b:2" --trace "$WORK/trace" \
    "$WORK/coll" --only alltoall --min-size 4k --max-size 256k --pow4 --reps 3 --rep-ms 100
"$BUILD/bin/gridmpi-trace" summary "$WORK/trace"
"$BUILD/bin/gridmpi-trace" report "$WORK/trace" -o "$WORK/report.html" \
    --title "bench/coll.c MPI_Alltoall 4k-256k, 4 ranks on 2 hosts, $LOSS% loss between them"
"$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
    --disable-sync --no-first-run --hide-scrollbars --user-data-dir="$WORK/chrome" --window-size=1180,1250 \
    --screenshot="$OUT" "file://$WORK/report.html" 2>/dev/null
echo "wrote $OUT"
