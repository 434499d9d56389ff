# Check 1e: check 1c (every timer wake method, the spike BELOW the measuring thread) traced by
# the BPF back end (ci/lab/checks/trace-methods.lib).
LAB_SCENE=below
LAB_BACKEND=bpf
. /lab/checks/trace-methods.lib
