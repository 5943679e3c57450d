#!/bin/sh
# slurmd as a testbed host: `gridmpi-testbed exec hN -- sh slurmd.sh CONF`.
# The host's mount namespace has a sysfs of its own, without the cgroup
# hierarchies slurmd 22.05 insists on even when it tracks processes by
# process group: mount them there (this namespace only; the hierarchies are
# the machine's, and slurmd creates nothing in them with these settings).
mount -t tmpfs cgroup_root /sys/fs/cgroup || exit 1
ok=1
for c in freezer cpuset memory devices cpu,cpuacct pids; do
    mkdir -p /sys/fs/cgroup/$c && mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c 2>/dev/null || ok=0
done
mkdir -p /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd 2>/dev/null || ok=0
if [ $ok = 0 ]; then
    # A machine with cgroup v2 only.
    umount -R /sys/fs/cgroup 2>/dev/null
    mount -t cgroup2 none /sys/fs/cgroup || exit 1
fi
exec slurmd -D -f "$1"
