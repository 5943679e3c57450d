# Sourced by tests that run a few jobs on an emulated grid of their own
# (tests/dynamic/run.sh, tests/hdf5/run.sh); tests/testbed/run.sh tests
# the testbed itself.
#
#   grid_up LABEL SPEC [UP ARGS...]   bring up a grid; returns 0 when it is up,
#                                     1 after printing "SKIP  LABEL (why)" (not root,
#                                     missing features, another grid up) or
#                                     2 after printing "FAIL  LABEL: ..." (up failed)
#   grid_down                         tear it down
#
# GRID_TB: the gridmpi-testbed binary (default: build/bin of this repository).
GRID_TB=${GRID_TB:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/bin/gridmpi-testbed}

grid_up() {
    local label=$1 log
    shift
    if [ "$(id -u)" != 0 ] || ! "$GRID_TB" check >/dev/null 2>&1; then
        echo "SKIP  $label (needs root and what gridmpi-testbed check lists)"
        return 1
    fi
    if [ -e /run/gridmpi-testbed/state.json ]; then
        echo "SKIP  $label (another emulated grid is up)"
        return 1
    fi
    if ! log=$("$GRID_TB" up "$@" 2>&1); then
        echo "FAIL  $label: gridmpi-testbed up: $(tail -n 3 <<<"$log")"
        return 2
    fi
}

grid_down() {
    "$GRID_TB" down >/dev/null 2>&1 || "$GRID_TB" down --force >/dev/null 2>&1
}
