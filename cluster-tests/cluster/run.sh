#!/usr/bin/env bash
# Runs the 3-node gossip cluster suite (cluster-tests/cluster) and ends
# with pytest's summary line. Every test starts its own nodes and simulators on 127.0.0.1
# with free ports and temp dirs, and stops them.
#
#   cluster-tests/cluster/run.sh [--nsrvd PATH] [pytest args, e.g. -k restart]
#
# Binary: --nsrvd, else $NSRVD_BIN, else build/src/nsrvd in the repository root; nsrv-brokersim is
# taken from tools/ next to it (or $NSRV_BROKERSIM_BIN). Figures are printed ([figures]
# lines) and written to $NSRV_CLUSTER_RESULTS (default: cluster-results.json in pytest's
# base temp dir, printed at the end). Knobs: NSRV_RESTART_BROKERS, NSRV_RESTART_REPS,
# NSRV_RESTART_NOGOSSIP_REPS, NSRV_BW_WINDOW_S, NSRV_TEST_TIMEOUT_MULT (sanitizer builds).
set -u
here=$(cd "$(dirname "$0")" && pwd)
nsrvd=${NSRVD_BIN:-$(cd "$here/../.." && pwd)/build/src/nsrvd}
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --nsrvd) nsrvd=$2; shift 2 ;;
    --nsrvd=*) nsrvd=${1#--nsrvd=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
for mod in pytest cryptography; do
  python3 -c "import $mod" 2>/dev/null || { echo "python3 module '$mod' missing (Debian: python3-$mod)"; exit 2; }
done
[ -x "$nsrvd" ] || { echo "nsrvd binary not found: $nsrvd (build it, or pass --nsrvd PATH)"; exit 2; }
cd "$here"
# No path given: pytest collects this directory (the working directory).
exec python3 -m pytest -p no:cacheprovider -s -v -rfE --nsrvd="$nsrvd" ${args[@]+"${args[@]}"}
