# Sourced by the trace tests: two network namespaces joined by a veth pair,
# with random loss on the wire. Each namespace plays one host of a job
# (tests/trace/nsagent runs a rank "on" it).
#
#   lossy_link_reason            why it cannot be built here (empty: it can)
#   lossy_link_up A B PERCENT    namespaces A (10.88.0.1) and B (10.88.0.2);
#                                each drops PERCENT% of the TCP packets that
#                                arrive on its side (nftables, netdev ingress)
#   lossy_link_dropped NS        packets dropped so far on arrival in NS
#   lossy_link_loss on|off       drop again / stop dropping (both sides)
#   lossy_link_down              end what runs inside, delete the namespaces
#
# TSO/GSO/GRO are off on the veths, so a drop is one real segment, not a
# 64 KiB super-packet.

LOSSY_NS=()
LOSSY_SIDES=() # "NS DEVICE" of each side
LOSSY_PERMILLE=0

lossy_link_reason() {
    if [ "$(id -u)" != 0 ]; then
        echo "needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN: network namespaces, veth, nftables)"
        return
    fi
    local missing=""
    for tool in ip nstat nft ethtool unshare hostname python3; do
        command -v $tool >/dev/null 2>&1 || missing="$missing $tool"
    done
    if [ -n "$missing" ]; then
        echo "missing$missing (apt-get install iproute2 nftables ethtool util-linux hostname python3)"
    fi
    return 0
}

lossy_link_up() { # NS_A NS_B PERCENT
    local a=$1 b=$2 permille
    permille=$(awk -v p="$3" 'BEGIN { printf "%d", p * 10 + 0.5 }')
    LOSSY_PERMILLE=$permille
    ip netns add "$a" || return 1
    LOSSY_NS+=("$a")
    ip netns add "$b" || return 1
    LOSSY_NS+=("$b")
    ip link add gtrva netns "$a" type veth peer name gtrvb netns "$b" || return 1
    local side
    for side in "$a gtrva 10.88.0.1" "$b gtrvb 10.88.0.2"; do
        set -- $side
        ip -n "$1" link set lo up || return 1
        ip -n "$1" addr add "$3/24" dev "$2" || return 1
        ip -n "$1" link set "$2" up || return 1
        ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1
        LOSSY_SIDES+=("$1 $2")
    done
    lossy_link_loss on
}

lossy_link_loss() { # on|off
    local what=$1 side
    for side in "${LOSSY_SIDES[@]}"; do
        set -- $side
        ip netns exec "$1" nft delete table netdev gtrloss 2>/dev/null
        [ "$what" = off ] && continue
        ip netns exec "$1" nft -f - <<NFT || return 1
table netdev gtrloss {
    chain in {
        type filter hook ingress device "$2" priority 0;
        meta protocol ip ip protocol tcp numgen random mod 1000 < $LOSSY_PERMILLE counter drop
    }
}
NFT
    done
}

lossy_link_dropped() { # NS
    ip netns exec "$1" nft list table netdev gtrloss 2>/dev/null | grep -o 'packets [0-9]*' | cut -d' ' -f2
}

lossy_link_down() {
    local ns p
    for ns in "${LOSSY_NS[@]}"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
        ip netns delete "$ns" 2>/dev/null
    done
    LOSSY_NS=()
    LOSSY_SIDES=()
}
