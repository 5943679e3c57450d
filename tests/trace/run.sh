#!/usr/bin/env bash
# End-to-end tests of tracing (gridmpirun --trace, gridmpi-trace):
#
#  1. a traced job over TCP on this machine: every rank writes its trace, and
#     summary, report and CSV read them (no root needed);
#  2. a traced job across a lossy link: two network namespaces joined by a
#     veth pair, nftables dropping LOSS% of the TCP packets that arrive on
#     each side; the retransmissions and RTO recoveries that gridmpi-trace
#     reports per rank must be those the kernel counted in that rank's
#     namespace (nstat: TcpRetransSegs, TcpExtTCPTimeouts, which counts every
#     firing of the retransmission timer) (root);
#  3. the HTML report rendered by headless Chromium: a screenshot that is
#     not blank (needs the chromium package).
#
#   tests/trace/run.sh                       # after `make build`
#   GRIDMPI_BUILD=/path/to/build tests/trace/run.sh
#   LOSS=3 ITERS=300 tests/trace/run.sh      # loss in percent, iterations
#   ARTIFACTS=DIR tests/trace/run.sh         # keep traces, reports, screenshots in DIR
#
# Needs: build/{bin/gridmpirun,bin/mpicc,bin/gridmpi-trace,lib}; iproute2
# (ip, nstat), nftables, ethtool, util-linux (unshare), python3; chromium
# for the screenshot. Without root, test 2 is skipped and says why.
# Cleans up its namespaces and processes, also when interrupted.
# Prints "N passed, N failed, N skipped"; exits non-zero if a test failed.

set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/tests/trace"
BUILD=${GRIDMPI_BUILD:-$ROOT/build}
RUN="$BUILD/bin/gridmpirun"
MPICC="$BUILD/bin/mpicc"
TRACE=${GRIDMPI_TRACE_TOOL:-$BUILD/bin/gridmpi-trace}
LOSS=${LOSS:-5}
ITERS=${ITERS:-400}
SIZE=${SIZE:-16k}
WORK=$(mktemp -d /tmp/gridmpi-trace-test.XXXXXX)
ARTIFACTS=${ARTIFACTS:-$WORK}
mkdir -p "$ARTIFACTS"
NS_A="gtr$$a"
NS_B="gtr$$b"
PASSED=0 FAILED=0 SKIPPED=0
. "$HERE/lossy-link.sh"

pass() { PASSED=$((PASSED + 1)); printf 'PASS  %s\n' "$*"; }
fail() { FAILED=$((FAILED + 1)); printf 'FAIL  %s\n' "$*"; }
skip() { SKIPPED=$((SKIPPED + 1)); printf 'SKIP  %s\n' "$*"; }
note() { printf '      %s\n' "$*"; }

cleanup() {
    local rc=$?
    lossy_link_down
    [ "$ARTIFACTS" = "$WORK" ] && rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

finish() {
    echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
    [ "$FAILED" -eq 0 ]
    exit $?
}

# ---------------------------------------------------------------- preflight
if [ ! -x "$TRACE" ] && [ -z "${GRIDMPI_TRACE_TOOL:-}" ]; then
    # Not installed by make build: use (or build) the workspace's binary.
    [ -x "$ROOT/target/release/gridmpi-trace" ] || (cd "$ROOT" && cargo build -q --release -p gridmpi-trace)
    TRACE="$ROOT/target/release/gridmpi-trace"
fi
missing=()
for f in "$RUN" "$MPICC" "$TRACE" "$BUILD/lib/libmpi.so.12"; do
    [ -e "$f" ] || missing+=("$f")
done
if [ ${#missing[@]} -gt 0 ]; then
    fail "missing ${missing[*]} (run make build; gridmpi-trace: cargo build --release -p gridmpi-trace)"
    finish
fi
echo "trace tests: build $BUILD, work dir $WORK, artifacts $ARTIFACTS"
if ! "$MPICC" -O2 -o "$WORK/exchange" "$HERE/exchange.c" 2>"$WORK/cc.err"; then
    fail "compile tests/trace/exchange.c: $(cat "$WORK/cc.err")"
    finish
fi

# Values of a column of connections.csv: sum over the rows of one rank.
csv_sum() { # FILE RANK COLUMN
    python3 - "$@" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r['rank'] == sys.argv[2]]
print(sum(int(float(r[sys.argv[3]])) for r in rows))
EOF
}

# ------------------------------------------------- 1: a local traced job
T1="$ARTIFACTS/local"
rm -rf "$T1"
if timeout 120 "$RUN" -n 3 --trace "$T1" -genv GRIDMPI_TRANSPORT tcp "$WORK/exchange" -s 256k -n 40 >"$WORK/t1.out" 2>&1; then
    pass "traced 3-rank job over TCP ran ($(grep -o 'mode=[a-z0-9]*' "$WORK/t1.out" | head -1))"
else
    fail "traced 3-rank job: $(tail -5 "$WORK/t1.out")"
fi
n=$(ls "$T1"/rank-*.trace 2>/dev/null | wc -l)
[ "$n" -eq 3 ] && pass "one trace file per rank" || fail "expected 3 rank-N.trace in $T1, found $n"
if "$TRACE" summary "$T1" --csv "$T1/csv" >"$WORK/t1.sum" 2>&1; then
    rows=$(grep -cE '^[0-9]+ → [0-9]+ ' "$WORK/t1.sum")
    [ "$rows" -eq 6 ] && pass "summary lists the 6 connections (3 ranks x 2 peers)" || { fail "summary has $rows connection rows, want 6"; cat "$WORK/t1.sum"; }
    ok=1
    for r in 0 1 2; do
        s=$(csv_sum "$T1/csv/connections.csv" $r bytes_sent)
        [ "$s" -ge $((2 * 40 * 256 * 1024)) ] || { ok=0; note "rank $r sent $s bytes"; }
    done
    [ $ok = 1 ] && pass "every rank's traced bytes cover what it sent (>= 2 x 40 x 256 KiB)" || fail "traced bytes too small"
    grep -q "tracer:" "$WORK/t1.sum" && note "$(grep 'tracer:' "$WORK/t1.sum")"
else
    fail "gridmpi-trace summary: $(tail -3 "$WORK/t1.sum")"
fi
REPORT="$T1/report.html"
if "$TRACE" report "$T1" -o "$REPORT" --title "local TCP job" >/dev/null 2>"$WORK/t1.rep"; then
    if grep -q '<svg' "$REPORT" && ! grep -qE 'src="http|href="http|<link ' "$REPORT"; then
        pass "report is one self-contained HTML page ($(du -k "$REPORT" | cut -f1) KiB)"
    else
        fail "report is not self-contained or has no plot"
    fi
else
    fail "gridmpi-trace report: $(cat "$WORK/t1.rep")"
fi

# ------------------------------------------------- 2: across a lossy link
lossy_reason=$(lossy_link_reason)
if [ -n "$lossy_reason" ]; then
    skip "traced job across a lossy link: $lossy_reason"
else
    if ! lossy_link_up "$NS_A" "$NS_B" "$LOSS"; then
        fail "could not build the lossy link (namespaces, veth, nftables)"
    else
        T2="$ARTIFACTS/lossy"
        nstat_json() { ip netns exec "$1" nstat -asz --json 2>/dev/null; }
        # Random loss makes RTOs likely, not certain: if a run had none, run
        # again with more iterations (at most three runs).
        iters=$ITERS
        # The loss stops once both ranks are done exchanging and before
        # MPI_Finalize takes the trace's final samples and closes the
        # connections: what the kernel counts after the final samples (a
        # FIN lost, then resent on a timeout) the trace cannot see.
        dropped=""
        for attempt in 1 2 3; do
            rm -rf "$T2" "$WORK/go"
            lossy_link_loss on
            nstat_json "$NS_A" >"$WORK/nA0.json"
            nstat_json "$NS_B" >"$WORK/nB0.json"
            timeout 300 "$RUN" -n 2 --launcher "$HERE/nsagent" -hosts "$NS_A,$NS_B" --trace "$T2" \
                "$WORK/exchange" -s "$SIZE" -n "$iters" -w "$WORK/go" >"$WORK/t2.out" 2>&1 &
            job=$!
            while kill -0 $job 2>/dev/null && [ "$(grep -c '^WAITING' "$WORK/t2.out")" -lt 2 ]; do
                sleep 0.05
            done
            dropped="$(lossy_link_dropped "$NS_A") in $NS_A, $(lossy_link_dropped "$NS_B") in $NS_B"
            lossy_link_loss off
            sleep 1 # timers armed by a loss just before fire now, seen by both
            touch "$WORK/go"
            wait $job
            job_rc=$?
            sleep 1 # let the connections' last segments (FIN) settle
            nstat_json "$NS_A" >"$WORK/nA1.json"
            nstat_json "$NS_B" >"$WORK/nB1.json"
            [ $job_rc -ne 0 ] && break
            "$TRACE" csv "$T2" -o "$T2/csv" >/dev/null 2>&1 || break
            python3 "$HERE/compare_nstat.py" "$T2/csv/connections.csv" "$WORK" "$NS_A" "$NS_B" >"$WORK/cmp.txt"
            grep -q NOLOSS "$WORK/cmp.txt" || break
            note "run $attempt ($iters iterations) had no RTO; again with more"
            iters=$((iters * 2))
        done
        if [ $job_rc -eq 0 ]; then
            pass "traced job across a link losing $LOSS% ran ($iters x $SIZE): $(grep -o 'mode=[a-z0-9]* .*us_per_iter=[0-9.]*' "$WORK/t2.out")"
        else
            fail "traced job across the lossy link: $(tail -5 "$WORK/t2.out")"
        fi
        note "TCP packets dropped on arrival: $dropped"
        if [ $job_rc -eq 0 ] && "$TRACE" summary "$T2" --csv "$T2/csv" >"$T2/summary.txt" 2>&1 && \
           "$TRACE" report "$T2" -o "$T2/report.html" --title "2 ranks, $LOSS% loss" >/dev/null 2>&1; then
            cp "$WORK"/n??.json "$T2/" 2>/dev/null
            sed 's/^/      | /' "$T2/summary.txt"
            # Per rank (= per namespace): trace totals against the kernel's.
            python3 "$HERE/compare_nstat.py" "$T2/csv/connections.csv" "$WORK" "$NS_A" "$NS_B" >"$WORK/cmp.txt"
            cmp_rc=$?
            sed 's/^/      /' "$WORK/cmp.txt"
            cp "$WORK/cmp.txt" "$T2/kernel-vs-trace.txt"
            if [ $cmp_rc -eq 0 ]; then
                pass "per namespace, the trace's retransmissions and RTOs are the kernel's (nstat)"
            else
                fail "trace and kernel counters differ (see above)"
            fi
            if grep -q NOLOSS "$WORK/cmp.txt"; then
                fail "the runs saw no RTO or no retransmission, so there is nothing to show (LOSS=$LOSS ITERS=$ITERS)"
            else
                pass "retransmissions and RTOs happened and are in the summary"
            fi
            total_rto=$(csv_sum "$T2/csv/connections.csv" 0 rtos)
            total_rto=$((total_rto + $(csv_sum "$T2/csv/connections.csv" 1 rtos)))
            if [ "$total_rto" -gt 0 ] && grep -q 'class="bad"' "$T2/report.html" && grep -q '<title>RTO' "$T2/report.html"; then
                pass "the report marks the RTOs ($total_rto) on the plots and in the table"
            else
                fail "the report does not show the RTOs"
            fi
            REPORT="$T2/report.html"
        elif [ $job_rc -eq 0 ]; then
            fail "gridmpi-trace on the lossy run: $(tail -3 "$T2/summary.txt")"
        fi
    fi
fi

# ------------------------------------------------- 3: what a person sees
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ]; then
    skip "report screenshot: no chromium (apt-get install chromium)"
elif [ ! -s "${REPORT:-}" ]; then
    fail "report screenshot: no report to render"
else
    SHOT="$ARTIFACTS/report.png"
    rm -f "$SHOT"
    timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
        --user-data-dir="$WORK/chrome" --window-size=1180,2000 --screenshot="$SHOT" \
        "file://$REPORT" >"$WORK/chrome.log" 2>&1
    # Not blank: a screenshot of an empty page compresses to a few KiB.
    python3 - "$SHOT" >"$WORK/png.txt" 2>&1 <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
# Decode enough of the image to count distinct colours.
idat = b"".join(data[i + 8:i + 8 + struct.unpack(">I", data[i:i + 4])[0]]
                for i in range(8, len(data)) if data[i + 4:i + 8] == b"IDAT")
raw = zlib.decompress(idat)
bpp = 4 if data[25] == 6 else 3
colours = set(raw[k:k + 3] for k in range(1, min(len(raw), 4_000_000), 97))
print(f"{w}x{h}, {len(data) // 1024} KiB, {len(colours)} colours sampled")
assert w >= 1000 and h >= 1000 and len(colours) >= 8, "blank or tiny"
EOF
    if [ $? -eq 0 ]; then
        pass "headless Chromium renders the report: $(cat "$WORK/png.txt") -> $SHOT"
    else
        fail "report screenshot: $(cat "$WORK/png.txt") $(tail -3 "$WORK/chrome.log")"
    fi
fi

finish
