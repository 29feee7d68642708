#!/usr/bin/env bash
# Start or stop a private Docker engine for tests (no systemd, no iptables, no bridge):
#   eval "$(bash scripts/dockerd.sh start DIR)"   # prints `export DOCKER_HOST=...`
#   bash scripts/dockerd.sh stop DIR
# Everything it keeps (images, containers, socket, log) lives under DIR.
set -euo pipefail
action=${1:?usage: dockerd.sh start|stop DIR}
dir=$(mkdir -p "${2:?usage: dockerd.sh start|stop DIR}" && cd "$2" && pwd)
sock="unix://$dir/docker.sock"
case "$action" in
  start)
    command -v dockerd >/dev/null || { echo "dockerd.sh: dockerd not installed (apt-get install docker.io)" >&2; exit 1; }
    if ! DOCKER_HOST=$sock docker info >/dev/null 2>&1; then
      nohup dockerd --data-root "$dir/data" --exec-root "$dir/exec" --host "$sock" --pidfile "$dir/dockerd.pid" \
        --iptables=false --ip6tables=false --bridge=none >"$dir/dockerd.log" 2>&1 &
      for _ in $(seq 60); do
        DOCKER_HOST=$sock docker info >/dev/null 2>&1 && break
        sleep 0.5
      done
      DOCKER_HOST=$sock docker info >/dev/null 2>&1 || { echo "dockerd.sh: engine did not start, see $dir/dockerd.log" >&2; tail -5 "$dir/dockerd.log" >&2; exit 1; }
    fi
    echo "export DOCKER_HOST=$sock"
    ;;
  stop)
    if [ -f "$dir/dockerd.pid" ]; then
      pid=$(cat "$dir/dockerd.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    fi
    ;;
  *) echo "usage: dockerd.sh start|stop DIR" >&2; exit 2 ;;
esac
