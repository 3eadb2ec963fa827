#!/usr/bin/env bash
# minijax bench: builds and runs the MLP training-step benchmark next to its peers (libtorch C++,
# PyTorch) back to back in one environment, and prints one JSON line with ms/step and the ratios.
#
# Usage: bench/run_mlp.sh [--breakdown]      (from anywhere; env: STEPS, WARMUP, BUILD_DIR, SHARED_DIR,
#                                             PYTHON, MINIJAX_FASHION_MNIST)
# Needs Debian's python3-torch and libtorch-dev for the peers (apt-get install -y python3-torch
# libtorch-dev); they are not dependencies of minijax itself. OPENBLAS_CORETYPE and the other
# variables of the environment are left as they are, for all three programs alike.
# The peers (../shared/bench) time one epoch (468 steps) from its first step, batch selection
# included; minijax times STEPS steps (default 100) after WARMUP steps (default 10), batch
# assembly included. Logs of each program go to $BUILD_DIR/bench/logs/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
build="${BUILD_DIR:-$root/build-bench}"
shared="${SHARED_DIR:-$root/../shared}"
python="${PYTHON:-/usr/bin/python3}"
steps="${STEPS:-100}"
warmup="${WARMUP:-10}"
extra=()
if [[ "${1:-}" == "--breakdown" ]]; then extra+=(--breakdown); fi

logs="$build/bench/logs"
mkdir -p "$logs" "$build/bench/peers"

# --- build --------------------------------------------------------------------------------------
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMINIJAX_BUILD_BENCH=ON >"$logs/cmake.log"
make -C "$build" -j2 minijax_bench_mlp_step >"$logs/make.log" 2>&1 ||
  { tail -30 "$logs/make.log" >&2; exit 1; }
libtorch_bin="$build/bench/peers/libtorch_mlp"
if [[ ! -x "$libtorch_bin" || "$shared/bench/libtorch_mlp.cpp" -nt "$libtorch_bin" ]]; then
  # The build line of ../shared/bench/README.md.
  g++ -std=c++17 -O2 "$shared/bench/libtorch_mlp.cpp" -I/usr/include/torch/csrc/api/include \
    -ltorch -ltorch_cpu -lc10 -lz -o "$libtorch_bin" 2>"$logs/libtorch_build.log" ||
    { tail -30 "$logs/libtorch_build.log" >&2; exit 1; }
fi

# --- run, back to back --------------------------------------------------------------------------
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/minijax_bench_mlp_step" --steps "$steps" --warmup "$warmup" "${extra[@]}" \
  >"$logs/minijax.json" 2>"$logs/minijax.err"
"$libtorch_bin" >"$logs/libtorch.txt" 2>&1
"$python" "$shared/bench/torch_mlp.py" 1 >"$logs/pytorch.txt" 2>&1
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# --- report -------------------------------------------------------------------------------------
"$python" - "$logs" "$load_before" "$load_after" <<'EOF'
import json, os, platform, re, sys, datetime
logs, load_before, load_after = sys.argv[1:4]
mj = json.load(open(os.path.join(logs, 'minijax.json')))
def peer(file, pattern):
    text = open(os.path.join(logs, file)).read()
    m = re.search(pattern, text)
    if not m:
        sys.exit(f'run_mlp.sh: could not read ms/step from {file}:\n{text}')
    return float(m.group(2)), int(m.group(1))
lt_ms, lt_steps = peer('libtorch.txt', r'libtorch: (\d+) steps \S+ ([0-9.]+) ms/step')
pt_ms, pt_steps = peer('pytorch.txt', r'torch \S+: (\d+) steps \S+ ([0-9.]+) ms/step')
cpu = 'unknown'
for line in open('/proc/cpuinfo'):
    if line.startswith('model name'):
        cpu = line.split(':', 1)[1].strip(); break
out = {
    'date': datetime.datetime.now().isoformat(timespec='seconds'),
    'machine': f'{cpu}, {os.cpu_count()} cpus, {platform.machine()}',
    'OPENBLAS_CORETYPE': os.environ.get('OPENBLAS_CORETYPE'),
    'loadavg_before': load_before, 'loadavg_after': load_after,
    'minijax_ms_per_step': round(mj['ms_per_step'], 3),
    'minijax_ms_median': round(mj['ms_median'], 3),
    'minijax_steps': mj['steps'],
    'libtorch_ms_per_step': lt_ms, 'libtorch_steps': lt_steps,
    'pytorch_ms_per_step': pt_ms, 'pytorch_steps': pt_steps,
    'ratio_minijax_libtorch': round(mj['ms_per_step'] / lt_ms, 3),
    'ratio_minijax_pytorch': round(mj['ms_per_step'] / pt_ms, 3),
}
if 'breakdown' in mj:
    out['minijax_breakdown'] = mj['breakdown']
print(json.dumps(out))
EOF
