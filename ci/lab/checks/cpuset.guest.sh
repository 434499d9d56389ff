# Check 4: the cgroup v2 partition of --cpuset-partition, with CPU 1 measured (the CPU the RT
# boot isolates). The guest has no cgroup v1: cgroup2 at /sys/fs/cgroup, and this shell (the
# init's child) in its root cgroup. Three scenes, each one's facts in files for the host's
# verdict (ci/lab/checks/cpuset.sh):
#   a/ a 4 s run: the partition read while it runs (from this shell, polling), gone after;
#   b/ a 30 s run SIGKILLed once its partition holds the measuring thread: the partition
#      and its journal stay; the next start (a 1 s run without the option) removes both;
#   c/ refused: the same run from a child cgroup of the root, whose parent is no partition
#      root (Linux 6.1): exit 3 with the kernel's reason, nothing left;
#   d/ refused: a spike load pinned to the measured CPU with the option: exit 2 naming both,
#      before anything is made.
cg=/sys/fs/cgroup
jdir=/run/jitterlab-root
mkdir -p /run
cat $cg/cgroup.controllers >controllers
cat $cg/cgroup.subtree_control >subtree-before

# What is there for the partition of jitterlab $1, into directory $2: its files, the root's
# effective CPUs, and the cgroup of every thread of the process.
snapshot() {
    mkdir -p "$2"
    d=$cg/jitterlab-$1
    for f in cgroup.type cpuset.cpus cpuset.cpus.effective cpuset.cpus.partition cgroup.threads; do
        cat "$d/$f" >"$2/$f" 2>&1
    done
    cat $cg/cpuset.cpus.effective >"$2/root-cpus-effective"
    cat $cg/cgroup.subtree_control >"$2/root-subtree"
    for t in /proc/$1/task/*; do
        echo "${t##*/} $(cat "$t/cgroup")"
    done >"$2/task-cgroups"
    ls $jdir >"$2/journals" 2>&1
}

# Polls (every 50 ms, at most $3 s) until the partition of jitterlab $1 holds a thread; then
# a snapshot into $2. Returns 1 if it never did.
await_partition() {
    n=0
    while [ $n -lt $(($3 * 20)) ]; do
        # cgroupfs files have no size: read it.
        if [ -n "$(cat "$cg/jitterlab-$1/cgroup.threads" 2>/dev/null)" ]; then
            snapshot "$1" "$2"
            return 0
        fi
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.05
        n=$((n + 1))
    done
    return 1
}

# After jitterlab $1 ended: what stays, into $2.
after() {
    mkdir -p "$2"
    [ -e "$cg/jitterlab-$1" ] && echo yes >"$2/cgroup-exists" || echo no >"$2/cgroup-exists"
    cat $cg/cgroup.subtree_control >"$2/root-subtree"
    cat $cg/cpuset.cpus.effective >"$2/root-cpus-effective"
    ls $jdir >"$2/journals" 2>&1
}

echo "== a: a run with --cpuset-partition"
/jitterlab run --cpus 1 --duration 4s --cpuset-partition --quiet --out run-a >a.stdout 2>a.stderr &
pid=$!
echo $pid >a.pid
await_partition $pid a-during 20 || echo "no partition seen" >a-during.missing
wait $pid
echo $? >a.exit
after $pid a-after

echo "== b: a run SIGKILLed, then the next start"
/jitterlab run --cpus 1 --duration 30s --cpuset-partition --quiet --out run-b >b.stdout 2>b.stderr &
pid=$!
echo $pid >b.pid
if await_partition $pid b-during 20; then
    sleep 1
    kill -9 $pid
fi
wait $pid
echo $? >b.exit
after $pid b-killed
/jitterlab run --cpus 1 --duration 1s --quiet --out run-b-next >b-next.stdout 2>b-next.stderr
echo $? >b-next.exit
after $pid b-next

echo "== c: refused where the parent is no partition root"
mkdir $cg/lab-c4
enabled=
grep -qw cpuset $cg/cgroup.subtree_control || { echo +cpuset >$cg/cgroup.subtree_control && enabled=1; }
# The child shell moves itself into lab-c4, then becomes jitterlab: its pid is the name.
sh -c "echo \$\$ >$cg/lab-c4/cgroup.procs && echo \$\$ >c.pid && exec /jitterlab run --cpus 1 --duration 2s --cpuset-partition --quiet --out run-c" >c.stdout 2>c.stderr
echo $? >c.exit
cat $cg/lab-c4/cgroup.subtree_control >c-lab-subtree
ls $cg/lab-c4 | grep '^jitterlab-' >c-children
ls $jdir >c-journals 2>&1
rmdir $cg/lab-c4
[ -n "$enabled" ] && echo -cpuset >$cg/cgroup.subtree_control
cat $cg/cgroup.subtree_control >subtree-after

echo "== d: a load pinned to the measured CPU, with the partition: refused before anything is made"
/jitterlab run --cpus 1 --duration 2s --cpuset-partition --quiet \
    --load "spike:cpu=1,every=400ms,len=5ms,prio=50" --out run-d >d.stdout 2>d.stderr
echo $? >d.exit
ls $cg | grep '^jitterlab-' >d-children
ls $jdir >d-journals 2>&1
exit 0
