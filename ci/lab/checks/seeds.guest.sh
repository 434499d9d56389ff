# Check 6: the seeds' experiment (the same workload on a standard and on a real-time kernel):
# idle, then hackbench, then a memory load, as one scenario, on the measured CPU 1 with the
# loads on every CPU; the host compares the two kernels' runs (verdict and across_seeds in
# seeds.sh).
cat >seeds.toml <<'TOML'
description = "The seeds' experiment: idle, then hackbench, then a memory load"

[[phase]]
label = "idle"
duration = "6s"
loads = []

[[phase]]
label = "hackbench"
duration = "6s"
loads = ["hackbench:groups=2"]

[[phase]]
label = "memory"
duration = "6s"
loads = ["memory:size=64M"]
TOML
/jitterlab run --scenario seeds.toml --cpus 1 --interval 1ms --load-cpus all --quiet \
    --out run >stdout 2>stderr
echo $? >run.exit
uname -r >uname-r
