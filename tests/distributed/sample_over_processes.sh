#!/usr/bin/env bash
# minijax test: samples/fashion_mnist_sharded over 2 processes of 4 devices (mpirun) gives the losses
# of one process of 8 devices, step by step, within float32 reduction-order rounding.
# Usage: sample_over_processes.sh MPIEXEC SAMPLE   (CTest: minijax_mpi_fashion_mnist_sharded)
set -euo pipefail
mpiexec="$1" sample="$2"
args=(--steps 30 --limit 1920 --batch 64 --hidden 64 --no-single)
one="$("$sample" --devices-per-process 8 "${args[@]}")"
two="$("$mpiexec" --oversubscribe -np 2 "$sample" --devices-per-process 4 "${args[@]}")"
echo "one process of 8 devices:"; echo "$one"
echo "two processes of 4 devices:"; echo "$two"
grep -q "2 processes of 4 devices" <<<"$two" || { echo "FAILED: the mpirun run did not use 2 processes"; exit 1; }
# Each step's loss within 1e-5 + 1e-4 |loss| (the sums over the batch and the hidden dims run in
# another order over processes), all 30 steps present in both runs.
# (grep -o: mpirun gives the processes a terminal, so the sample's progress line, ended by a
# carriage return, may share a line with a step's.)
paste <(grep -oE 'step [0-9]+  loss [-0-9.]+' <<<"$one" | awk '{print $2, $4}') \
      <(grep -oE 'step [0-9]+  loss [-0-9.]+' <<<"$two" | awk '{print $2, $4}') |
  awk 'BEGIN { n = 0; bad = 0 }
       { n++; d = $2 - $4; if (d < 0) d = -d; a = $2 < 0 ? -$2 : $2;
         if ($1 != $3 || d > 1e-5 + 1e-4 * a) { print "FAILED: step " $1 ": " $2 " vs " $4; bad = 1 } }
       END { if (n != 30) { print "FAILED: " n " steps compared, 30 expected"; bad = 1 }
             if (!bad) print "30 steps agree within 1e-5 + 1e-4 |loss|"; exit bad }'
