#!/usr/bin/env bash
# Reproduces Table 1: 5-fold CV accuracy of kNN and logistic regression, raw and standardised features.
set -euo pipefail
cd "$(dirname "$0")"
# One BLAS/OpenMP thread: the runs are small, and idle spinning threads slow shared machines down.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
python -m study.run
