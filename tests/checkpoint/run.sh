#!/bin/bash
# Checkpoint/restart round trips of C programs (make test-checkpoint).
#
# Each program runs once uninterrupted ("run": it checkpoints and goes on),
# then again killing itself by SIGKILL after each checkpoint ("kill"); the
# image is restored with gridmpi-restore, as many times as there are
# checkpoints (a restored process checkpoints again and dies again). The
# concatenated output of the interrupted runs must be byte for byte the
# uninterrupted run's. Then damaged images must be refused, with the reason.
#
# REPEAT=N runs the whole set N times. Needs target/release built:
# cargo build --release -p gridmpi-checkpoint --lib --bins --examples.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REL=$ROOT/target/release
RESTORE=$REL/gridmpi-restore
REPEAT=${REPEAT:-1}
CC=${CC:-cc}
[ -x "$RESTORE" ] && [ -f "$REL/libgridmpi_checkpoint.so" ] || { echo "run.sh: build first: cargo build --release -p gridmpi-checkpoint --lib --bins --examples" >&2; exit 2; }

WORK=$(mktemp -d /tmp/gridmpi-ckpt.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
failures=0
checks=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Everything the tests run is copied under $WORK (mode 755), so the
# unprivileged cases work wherever the source tree is.
mkdir -p "$WORK/lib"
cp "$REL/libgridmpi_checkpoint.so" "$REL/gridmpi-restore" "$ROOT/tests/checkpoint/python.py" "$WORK/lib/"
RESTORE=$WORK/lib/gridmpi-restore

# async.c's loops vectorized with AVX2 where there is AVX2: the saved and
# restored registers then include the ymm ones.
avx2=; grep -qw avx2 /proc/cpuinfo && avx2=-mavx2
for prog in single threads async; do
    opt=-O1; [ $prog = async ] && opt="-O2 $avx2"
    $CC $opt -g -Wall -Werror -pthread -I "$ROOT/crates/checkpoint/include" -o "$WORK/$prog" \
        "$ROOT/tests/checkpoint/$prog.c" -L "$WORK/lib" -lgridmpi_checkpoint -Wl,-rpath,"$WORK/lib" \
        || { echo "run.sh: cannot build $prog.c" >&2; exit 2; }
done

# python.py through a wrapper, so every program is run the same way
if command -v python3 > /dev/null; then
    printf '#!/bin/sh\nexec python3 "%s" "$@"\n' "$WORK/lib/python.py" > "$WORK/py"
    chmod 755 "$WORK/py"
fi
export GRIDMPI_CKPT_LIB=$WORK/lib/libgridmpi_checkpoint.so
# the Rust program (cargo build --release -p gridmpi-checkpoint --lib --bins --examples)
[ -x "$REL/examples/rust_roundtrip" ] && cp "$REL/examples/rust_roundtrip" "$WORK/rustprog"

# roundtrip NAME PROGRAM STEPS [USER [EXTRA]]: NAME is a directory in
# $WORK (so no program there may have a case's name); STEPS is the program's
# second argument, a list of steps to checkpoint at (or async's delay);
# USER (with setpriv) runs everything unprivileged; EXTRA is the
# program's last argument.
roundtrip() {
    local name=$1 prog=$2 steps=$3 user=${4:-} extra=${5:-}
    local d=$WORK/$name as=()
    checks=$((checks + 1))
    rm -rf "$d"; mkdir -p "$d/ref" "$d/ck"
    if [ -n "$user" ]; then
        chown -R "$(id -u "$user"):$(id -g "$user")" "$d"
        as=(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups --inh-caps=-all)
    fi
    # (the outer subshells' stderr: bash's "Killed" notes, expected here)
    ( (cd "$d/ref" && timeout 60 "${as[@]}" "$WORK/$prog" "$d/ref/img" "$steps" run $extra > out 2> err) ) 2> /dev/null
    local st=$?
    [ $st -eq 0 ] || { fail "$name: the uninterrupted run exited $st: $(cat "$d/ref/err")"; return; }
    ( (cd "$d/ck" && timeout 60 "${as[@]}" "$WORK/$prog" "$d/ck/img" "$steps" kill $extra > out.0 2> err.0) ) 2> /dev/null
    st=$?
    [ $st -eq 137 ] || { fail "$name: the run to checkpoint exited $st, not by SIGKILL after its checkpoint: $(cat "$d/ck/err.0")"; return; }
    local n i want
    n=$(echo "$steps" | tr ',' '\n' | wc -l)
    for i in $(seq 1 "$n"); do
        # from another directory: the image brings its own
        want=137; [ "$i" -eq "$n" ] && want=0
        ( (cd "$WORK" && timeout 60 "${as[@]}" "$RESTORE" "$d/ck/img" > "$d/ck/out.$i" 2> "$d/ck/err.$i") ) 2> /dev/null
        st=$?
        [ $st -eq $want ] || { fail "$name: restart $i of $n exited $st (expected $want): $(cat "$d/ck/err.$i")"; return; }
    done
    if ! cat $(for i in $(seq 0 "$n"); do echo "$d/ck/out.$i"; done) | cmp -s - "$d/ref/out"; then
        fail "$name: the restarted output differs from the uninterrupted run's:"
        cat $(for i in $(seq 0 "$n"); do echo "$d/ck/out.$i"; done) | diff - "$d/ref/out" | head -10 >&2
        return
    fi
    [ -s "$d/ref/out" ] && grep -q "done" "$d/ref/out" || { fail "$name: the reference run printed no result"; return; }
    echo "ok   $name ($n restart(s), $(stat -c %s "$d/ck/img") byte image)"
}

# refused CASE IMAGE EXPECTED: gridmpi-restore must exit 2 saying EXPECTED.
refused() {
    local name=$1 img=$2 expect=$3 st
    checks=$((checks + 1))
    timeout 30 "$RESTORE" "$img" > "$WORK/refused.out" 2> "$WORK/refused.err"
    st=$?
    if [ $st -ne 2 ] || ! grep -q "$expect" "$WORK/refused.err"; then
        fail "$name: gridmpi-restore exited $st saying: $(cat "$WORK/refused.err") (expected status 2 and \"$expect\")"
        return
    fi
    echo "ok   $name: $(cat "$WORK/refused.err")"
}

for rep in $(seq 1 "$REPEAT"); do
    [ "$REPEAT" -gt 1 ] && echo "--- round $rep of $REPEAT"
    roundtrip single-early single 0
    roundtrip single-mid single 17
    roundtrip single-twice single 5,30
    roundtrip threads-mid threads 11
    roundtrip threads-thrice threads 2,14,27
    roundtrip threads-by-worker threads 4,19 "" worker
    # at a moment the program does not choose: 20 to 300 ms into a
    # computation of 1.6 s here (a machine 5 times faster still has the
    # checkpoint fall inside it), from the library's own thread
    if [ -x "$WORK/py" ]; then
        roundtrip python py 3,17
    else
        echo "SKIP python: no python3"
    fi
    if [ -x "$WORK/rustprog" ]; then
        roundtrip rust rustprog 6,15
    else
        fail "rust: no $REL/examples/rust_roundtrip (cargo build --release -p gridmpi-checkpoint --lib --bins --examples)"
    fi
    delay=$((20 + RANDOM % 280))
    roundtrip "async-${delay}ms" async "$delay"
    if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
        roundtrip single-unprivileged single 9,21 nobody
        roundtrip threads-unprivileged threads 6 nobody
    elif [ "$(id -u)" != 0 ]; then
        echo "(running as $(id -un): every case above was unprivileged)"
    else
        echo "SKIP unprivileged cases: no setpriv"
    fi

    # Damaged images. One good image to damage:
    img=$WORK/single-mid/ck/img
    if [ -f "$img" ]; then
        size=$(stat -c %s "$img")
        cp "$img" "$WORK/flip"
        # one byte in the memory contents (near the end of the file)
        printf '\x5a' | dd of="$WORK/flip" bs=1 seek=$((size - 3000)) conv=notrunc status=none
        refused damaged-contents "$WORK/flip" "memory contents' checksum does not match"
        cp "$img" "$WORK/flipmeta"
        printf '\x5a' | dd of="$WORK/flipmeta" bs=1 seek=4200 conv=notrunc status=none
        refused damaged-meta "$WORK/flipmeta" "meta section's checksum does not match"
        head -c $((size / 2)) "$img" > "$WORK/short"
        refused truncated "$WORK/short" "is truncated"
        refused not-an-image /etc/passwd "not a GridMPI image"
        # a file the program mapped (here the program itself) changed
        mkdir -p "$WORK/changed"
        cp "$WORK/single" "$WORK/changed/prog"
        ( (cd "$WORK/changed" && ./prog "$WORK/changed/img" 0 kill > /dev/null 2>&1) ) 2> /dev/null
        touch -d "2001-01-01" "$WORK/changed/prog"
        refused changed-program "$WORK/changed/img" "changed since the checkpoint"
        checks=$((checks + 1))
        if info=$("$RESTORE" --info "$img") && echo "$info" | grep -q "checksums good.*; restorable here"; then
            echo "ok   info: $(echo "$info" | head -1)"
        else
            fail "info: gridmpi-restore --info $img said: $info"
        fi
    fi
done

echo "$((checks - failures)) of $checks checkpoint checks passed"
[ $failures -eq 0 ] || { echo "run.sh: $failures FAILED" >&2; exit 1; }
