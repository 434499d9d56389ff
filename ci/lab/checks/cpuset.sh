# Check 4's verdict (the files of ci/lab/checks/cpuset.guest.sh): the cgroup v2 partition of
# --cpuset-partition is a threaded cgroup jitterlab-<pid> holding CPU 1 as an isolated (or,
# where the kernel refuses that, root) partition while the run measures, with the measuring
# thread in it and every other thread of the process where it was; the root cgroup loses CPU
# 1 meanwhile; after the run the cgroup, its journal and the +cpuset enabled for it are gone.
# A SIGKILLed run leaves the cgroup and its journal; the next start removes both. From a
# cgroup whose parent is no partition root the option is refused (exit 3) with the reason,
# and nothing stays. With a load pinned to the measured CPU the option is refused (exit 2,
# naming both) before anything is made.
verdict_cpuset() {
    local dir=$1 problems=() f pid tid state moved others
    f() { cat "$dir/$1" 2>/dev/null; }
    # a: during and after a run.
    pid=$(f a.pid)
    if [[ $(f a.exit) != 0 ]]; then
        problems+=("a: the run exited $(f a.exit): $(tail -1 "$dir/a.stderr" 2>/dev/null)")
    elif [[ -e $dir/a-during.missing || ! -d $dir/a-during ]]; then
        problems+=("a: no partition with a thread in it was seen during the run")
    else
        [[ $(f a-during/cgroup.type) == threaded ]] || problems+=("a: cgroup.type $(f a-during/cgroup.type), not threaded")
        state=$(f a-during/cpuset.cpus.partition)
        [[ $state == isolated || $state == root ]] || problems+=("a: cpuset.cpus.partition reads '$state'")
        [[ $(f a-during/cpuset.cpus) == 1 ]] || problems+=("a: cpuset.cpus '$(f a-during/cpuset.cpus)', not 1")
        [[ $(f a-during/root-cpus-effective) != *1* ]] || problems+=("a: the root cgroup kept CPU 1 ($(f a-during/root-cpus-effective))")
        tid=$(jq -r '.threads[0].tid' "$dir/run-a/run.json" 2>/dev/null)
        [[ $(f a-during/cgroup.threads) == "$tid" ]] || problems+=("a: cgroup.threads '$(f a-during/cgroup.threads | tr '\n' ' ')', not the measuring thread $tid alone")
        moved=$(awk -v c="0::/jitterlab-$pid" '$2 == c' "$dir/a-during/task-cgroups" | wc -l)
        others=$(awk '$2 == "0::/"' "$dir/a-during/task-cgroups" | wc -l)
        if ((moved != 1 || others + moved != $(wc -l <"$dir/a-during/task-cgroups") || others < 1)); then
            problems+=("a: threads by cgroup: $(tr '\n' ';' <"$dir/a-during/task-cgroups")")
        fi
        jq -e --arg s "$state" '.environment.cpuset_partition | .cgroup == "v2" and .partition == $s' \
            "$dir/run-a/run.json" >/dev/null 2>&1 ||
            problems+=("a: run.json environment.cpuset_partition: $(jq -c '.environment.cpuset_partition' "$dir/run-a/run.json" 2>/dev/null)")
    fi
    [[ $(f a-after/cgroup-exists) == no ]] || problems+=("a: jitterlab-$pid is still there after the run")
    [[ $(f a-after/root-cpus-effective) == 0-1 ]] || problems+=("a: the root cgroup has CPUs $(f a-after/root-cpus-effective) after the run, not 0-1")
    [[ $(f a-after/root-subtree) == "$(f subtree-before)" ]] || problems+=("a: the root's subtree_control is '$(f a-after/root-subtree)' after, '$(f subtree-before)' before")
    ! grep -q '^cgroup2-cpuset-' "$dir/a-after/journals" 2>/dev/null || problems+=("a: a journal stayed: $(tr '\n' ' ' <"$dir/a-after/journals")")
    # b: SIGKILL, then the next start.
    pid=$(f b.pid)
    if [[ ! -d $dir/b-during ]]; then
        problems+=("b: the partition was never seen with its thread")
    else
        [[ $(f b.exit) == 137 ]] || problems+=("b: the killed run exited $(f b.exit), not 137")
        [[ $(f b-killed/cgroup-exists) == yes ]] || problems+=("b: jitterlab-$pid was not left by the SIGKILL (nothing for the next start to do)")
        grep -q "^cgroup2-cpuset-$pid" "$dir/b-killed/journals" 2>/dev/null || problems+=("b: no journal cgroup2-cpuset-$pid after the SIGKILL: $(tr '\n' ' ' <"$dir/b-killed/journals" 2>/dev/null)")
        [[ $(f b-next.exit) == 0 ]] || problems+=("b: the next run exited $(f b-next.exit): $(tail -1 "$dir/b-next.stderr" 2>/dev/null)")
        [[ $(f b-next/cgroup-exists) == no ]] || problems+=("b: the next start left jitterlab-$pid")
        ! grep -q '^cgroup2-cpuset-' "$dir/b-next/journals" 2>/dev/null || problems+=("b: a journal stayed after the next start")
        [[ $(f b-killed/root-cpus-effective) == 0 ]] || problems+=("b: the root cgroup has CPUs $(f b-killed/root-cpus-effective) after the SIGKILL, not 0 (the partition left holds CPU 1)")
        [[ $(f b-next/root-cpus-effective) == 0-1 ]] || problems+=("b: the root cgroup has CPUs $(f b-next/root-cpus-effective) after the next start, not 0-1")
        [[ $(f b-next/root-subtree) == "$(f subtree-before)" ]] || problems+=("b: the root's subtree_control is '$(f b-next/root-subtree)' after the next start")
    fi
    # c: refused from a child cgroup.
    if [[ $(f c.exit) != 3 ]]; then
        problems+=("c: exit $(f c.exit), not 3: $(tail -1 "$dir/c.stderr" 2>/dev/null)")
    elif ! grep -q 'partition root' "$dir/c.stderr"; then
        problems+=("c: the refusal names no reason about the parent: $(tail -1 "$dir/c.stderr")")
    fi
    [[ -z $(f c-children) ]] || problems+=("c: left $(f c-children) in lab-c4")
    [[ $(f c-lab-subtree) != *cpuset* ]] || problems+=("c: left +cpuset in lab-c4's subtree_control")
    ! grep -q '^cgroup2-cpuset-' "$dir/c-journals" 2>/dev/null || problems+=("c: a journal stayed")
    # d: a load pinned to the measured CPU with the partition: refused before anything is made.
    if [[ $(f d.exit) != 2 ]]; then
        problems+=("d: exit $(f d.exit), not 2: $(grep -v '^$' "$dir/d.stderr" 2>/dev/null | tail -1)")
    elif ! grep -q -- '--cpuset-partition with --load spike:cpu=1' "$dir/d.stderr"; then
        problems+=("d: the refusal does not name both the option and the load: $(grep -v '^$' "$dir/d.stderr" | tail -1)")
    fi
    [[ -z $(f d-children) ]] || problems+=("d: left $(f d-children | tr '\n' ' ')")
    ! grep -q '^cgroup2-cpuset-' "$dir/d-journals" 2>/dev/null || problems+=("d: a journal stayed")
    if ((${#problems[@]})); then
        local IFS=';'
        echo "${problems[*]}"
        return 1
    fi
    echo "a: jitterlab-$(f a.pid) $(f a-during/cgroup.type), partition $(f a-during/cpuset.cpus.partition) of CPU 1 with the measuring thread alone (root cgroup's CPUs $(f a-during/root-cpus-effective)), gone after with +cpuset taken back; b: left by SIGKILL with its journal, removed by the next start; c: refused (exit 3): $(tail -1 "$dir/c.stderr" | head -c 240); d: a spike load pinned to the measured CPU 1 with the partition refused (exit 2) before anything was made: $(grep -v '^$' "$dir/d.stderr" | tail -1 | head -c 160)..."
}
