#!/usr/bin/env bash
# minijax set-up: installs the Debian 12 packages needed to build, test and run minijax.
# Idempotent: installs only what is missing (one `apt-get update` first); runs as root or via sudo.
set -euo pipefail

PACKAGES=(
  build-essential        # g++ 12, make
  cmake                  # >= 3.25
  ccache                 # compiler cache (used automatically when present)
  git
  libxtensor-dev xtl-dev # host arrays
  libdnnl-dev            # oneDNN: f32 GEMM
  libopenblas-dev        # OpenBLAS: f64 GEMM (cblas)
  libopenblas-serial-dev # its single-threaded flavour, the one minijax links (no spinning workers)
  libgtest-dev           # googletest
  llvm-19-dev            # LLVM 19: code generation (ORC LLJIT)
  libtbb-dev             # oneTBB: the kernels' thread pool
  zlib1g-dev             # gzip'd IDX files, deflated .npz members
  python3-numpy          # the io tests' oracle: numpy reads minijax's files and writes files for it
  dataset-fashion-mnist  # the main job's data: /usr/share/datasets/fashion-mnist
  clang-19               # the sanitizer build .ci/run runs (tools/sanitize.sh), the fuzzers, tools/list_public_api.py
  libclang-rt-19-dev     # its sanitizer and libFuzzer runtimes
  graphviz               # `dot`: the test rendering mj::to_dot's graphs to SVG
  universal-ctags        # tools/long_functions.sh (the lint test): every library function's length
  clang-format-19        # tools/format_drift.sh: the library's lines .clang-format would change
  openmpi-bin libopenmpi-dev # MPI: several processes started by mpirun (mj::distributed)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup.sh: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null; then
  SUDO=(sudo)
else
  echo "setup.sh: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi

echo "setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
