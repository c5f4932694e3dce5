#!/usr/bin/env bash
# The full paper-cern run on a lent GPU machine (issue 13: "GPU where available"), as one prepared
# command: install insdel (and any wheels carried in .whl/, e.g. captum, which that machine's image
# lacks) into a throw-away target, print the machine, run `insdel reproduce paper-cern --device
# DEVICE`, and copy the run's manifest (seconds and model evaluations per stage), tables and log to
# $OUT. Nothing in insdel needs a GPU; this script is how the GPU figures in bench/RESULTS.md are made.
#
# Usage (repository root):  bash bench/gpu_paper_cern.sh [--quick] [--device cuda]
# Locally, without a GPU:   OUT=/tmp/o bash bench/gpu_paper_cern.sh --quick --device cpu
set -euo pipefail
quick=""
device=cuda
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=--quick ;;
        --device) device=$2; shift ;;
        *) echo "gpu_paper_cern.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
OUT=${OUT:?set OUT to the folder the results go to}
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
site=$(mktemp -d /tmp/insdel-site.XXXXXX)
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" .whl/*.whl
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir \
    --target "$site" .
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
cd /tmp  # import the installed copy, not the checkout
python3 - <<'EOF'
import os, platform, torch, numba, numpy, insdel
print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores; "
      f"python {platform.python_version()}, torch {torch.__version__}, numba {numba.__version__}, "
      f"numpy {numpy.__version__}, insdel {insdel.__version__} from {insdel.__file__}")
if torch.cuda.is_available():
    print("gpu:", torch.cuda.get_device_name(0), f"({torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB)")
EOF
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
run="$site/../insdel-run-$$"
t0=$(date +%s)
set +e
python3 -m insdel reproduce paper-cern $quick --device "$device" --out "$run" --no-progress 2>&1 | tee "$OUT/log.txt"
rc=${PIPESTATUS[0]}
set -e
t1=$(date +%s)
echo "gpu_paper_cern.sh: exit $rc, wall $((t1 - t0)) s"
[ -f "$run/manifest.json" ] && cp "$run/manifest.json" "$OUT/"
[ -f "$run/summary.csv" ] && cp "$run/summary.csv" "$OUT/"
python3 - "$run" <<'EOF' || true
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
c = m.get("compute", {})
print("device:", c.get("device"), "cpu_count:", c.get("cpu_count"))
tot = 0.0
for k, v in c.get("stages", {}).items():
    tot += v.get("seconds", 0.0)
    print(f"{k:55s} {v.get('seconds', 0.0):9.1f} s {int(v.get('model_evaluations', 0)):>13,d} evals")
print(f"{'total of stages':55s} {tot:9.1f} s")
EOF
exit "$rc"
