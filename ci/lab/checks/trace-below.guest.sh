# Check 1c: every timer wake method, the spike BELOW the measuring thread (ci/lab/checks/trace-methods.lib).
LAB_SCENE=below
. /lab/checks/trace-methods.lib
