#!/bin/sh
# slurmd as a testbed host: `gridmpi-testbed exec hN -- sh slurmd.sh CONF`.
# The host's mount namespace has a sysfs of its own, without the cgroup
# hierarchies slurmd 22.05 insists on even when it tracks processes by
# process group: mount the machine's own there (this namespace only; with
# these settings slurmd creates nothing in them).
mount -t tmpfs cgroup_root /sys/fs/cgroup || exit 1
v1=0
# /proc/self/cgroup: one "N:CONTROLLERS:PATH" line per hierarchy; v2 is "0::PATH".
for c in $(cut -d: -f2 /proc/self/cgroup); do
    [ -n "$c" ] || continue
    case $c in name=*) opts="none,$c" dir=${c#name=} ;; *) opts=$c dir=$c ;; esac
    mkdir -p "/sys/fs/cgroup/$dir" && mount -t cgroup -o "$opts" cgroup "/sys/fs/cgroup/$dir" && v1=1
done
if [ $v1 = 0 ]; then
    # A machine with cgroup v2 only.
    umount /sys/fs/cgroup
    mount -t cgroup2 none /sys/fs/cgroup || exit 1
fi
exec slurmd -D -f "$1"
