# Check 9: issue 43's interrupt storm. The guest of this check alone has a network card
# (LAB_GUEST[tune-irq]=nic=virtio: qemu's user-mode network, a virtio-net card). Its
# interrupts are pinned to the measured CPU 1 and driven by ping floods from CPU 0 to the
# user network's gateway 10.0.2.2 (qemu answers those pings itself: nothing leaves the host);
# then `jitterlab tune --fixes irq-affinity,vmstat` measures CPU 1. vmstat is the null fix
# (vm.stat_interval 1 s -> 10 s: one short per-CPU work item a second, nothing beside a storm).
# Facts for the host's verdict (ci/lab/checks/tune-irq.sh): nic-irqs (the card's interrupts,
# `IRQ NAME`), irq-rate (CPU 1's interrupts of the card a second, before the tune),
# tune.json (tune --json) and the tune directory (each arm's counters.log), pings (the floods'
# own statistics), pins-after (the card's affinities after the tune: still 1).
ROUNDS=${ROUNDS:-4}
ARM=${ARM:-4s}
FLOODS=${FLOODS:-4}
ip link set lo up
dev=$(ls /sys/class/net | grep -v '^lo$' | head -1)
if [ -z "$dev" ]; then
    echo "no network card in the guest (the virtio_net module? ls /sys/class/net: $(ls /sys/class/net))"
    exit 1
fi
ip link set "$dev" up
ip addr add 10.0.2.15/24 dev "$dev"
ip route add default via 10.0.2.2
echo "$dev" >nic
# The card's interrupts: its virtio device's lines in /proc/interrupts, `virtioN-input.0` and
# `virtioN-output.0` with MSI-X, or the one line `virtioN` (INTx: what qemu's virtio-net card
# got in Debian's 6.1 guest here).
vdev=$(basename "$(readlink "/sys/class/net/$dev/device")")
awk -v d="$vdev" '$NF == d || index($NF, d "-input") == 1 || index($NF, d "-output") == 1 { sub(":", "", $1); print $1, $NF }' /proc/interrupts >nic-irqs
if [ ! -s nic-irqs ]; then
    echo "no interrupt of $vdev ($dev) in /proc/interrupts"
    cat /proc/interrupts
    exit 1
fi
while read -r irq name; do
    cat "/proc/irq/$irq/smp_affinity_list" >"pin-before-$irq"
    echo 1 >"/proc/irq/$irq/smp_affinity_list" || { echo "cannot pin IRQ $irq ($name) to CPU 1"; exit 1; }
done <nic-irqs
cp /proc/interrupts interrupts-before
ping -c 3 -W 2 10.0.2.2 >ping-check 2>&1 || { echo "the gateway 10.0.2.2 does not answer pings:"; cat ping-check; exit 1; }

# The floods: each pings again as soon as the reply is in (-A), 1000-byte payloads.
pids=
i=0
while [ $i -lt "$FLOODS" ]; do
    taskset -c 0 ping -A -q -s 1000 10.0.2.2 >"ping-$i" 2>&1 &
    pids="$pids $!"
    i=$((i + 1))
done
# CPU 1's interrupts of the card over 2 s, with the floods on (column 3 of /proc/interrupts
# is CPU 1 on this 2-CPU guest).
cpu1() { awk -v irqs="$(cut -d' ' -f1 nic-irqs | tr '\n' ' ')" 'BEGIN { n = split(irqs, a, " "); for (i = 1; i <= n; i++) want[a[i] ":"] = 1 } ($1 in want) { s += $3 } END { print s + 0 }' /proc/interrupts; }
a=$(cpu1)
t0=$(cut -d' ' -f1 /proc/uptime)
sleep 2
b=$(cpu1)
t1=$(cut -d' ' -f1 /proc/uptime)
awk -v a="$a" -v b="$b" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f\n", (b - a) / (t1 - t0) }' >irq-rate
echo "CPU 1 takes $(cat irq-rate) interrupts of $dev a second"

date +%s >tune.start
/jitterlab tune --fixes irq-affinity,vmstat --rounds "$ROUNDS" -D "$ARM" --cpus 1 --json \
    --out /tmp/out/tune-irq/tune >tune.json 2>tune.stderr
echo $? >tune.exit
date +%s >tune.end
cp /proc/interrupts interrupts-after
# shellcheck disable=SC2086
kill -INT $pids 2>/dev/null
wait
cat ping-* >pings
while read -r irq name; do
    echo "$irq $(cat "/proc/irq/$irq/smp_affinity_list")"
    cat "pin-before-$irq" >"/proc/irq/$irq/smp_affinity_list"
done <nic-irqs >pins-after
echo "tune exit $(cat tune.exit), $(($(cat tune.end) - $(cat tune.start))) s"
tail -3 tune.stderr
exit 0
