# Check 1d: every timer wake method, the spike ABOVE the measuring thread (ci/lab/checks/trace-methods.lib).
LAB_SCENE=above
. /lab/checks/trace-methods.lib
