#!/usr/bin/env bash
# Reproduces Table 1: 5-fold CV accuracy of kNN and logistic regression, raw and standardised features.
set -euo pipefail
cd "$(dirname "$0")"
python -m study.run
