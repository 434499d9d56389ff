# Check 1f: check 1d (every timer wake method, the spike ABOVE the measuring thread) traced by
# the BPF back end (ci/lab/checks/trace-methods.lib).
LAB_SCENE=above
LAB_BACKEND=bpf
. /lab/checks/trace-methods.lib
