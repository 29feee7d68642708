#!/usr/bin/env bash
# Reproduces Table 1: trains the MLP for every smoothing value and seed, writes results/.
set -euo pipefail
cd "$(dirname "$0")"
python -m lsc.run
