#!/usr/bin/env bash
# Berth's container quick start (`npm run demo:docker`). With the real `berth`
# command and a private Docker it:
#   1. starts a private dockerd and registry (scripts/docker-rig.mjs: its own
#      socket, data and bridge under the demo's directory; the system's
#      /var/run/docker.sock is never touched) and builds the images the job
#      files name: busybox:1.35, Nomad's pause image, and Berth's hostpath CSI
#      plugin image (berth/hostpath-plugin:dev: node and Berth's build);
#   2. starts a dev agent whose config has Nomad's
#      `plugin "docker" { config { endpoint allow_privileged volumes infra_image } }`;
#   3. runs the hostpath plugin as a privileged docker job
#      (examples/docker/hostpath-plugin.hcl) and waits until it is healthy;
#   4. creates a volume through the plugin's controller (examples/volume.hcl);
#   5. runs a docker writer and a docker reader on the volume
#      (examples/docker/writer.hcl, reader.hcl) and shows what the reader read;
#   6. runs a web server in a container (examples/docker/web.hcl) and fetches
#      its page on 127.0.0.1 at the allocation's port;
#   7. deletes the volume, stops the agent with Ctrl-C (SIGINT), checks that
#      no container and no mount is left, and stops the private Docker.
# Every step has a heading; a failing step names itself and the demo exits
# non-zero. Whatever happens, the agent and the private Docker are stopped and
# the demo's directory removed (trap). Needs root (dockerd, bind mounts),
# Debian's docker.io, docker-registry and busybox-static (node
# scripts/ensure-docker.mjs installs them), and Node 20.
#
# Environment: BERTH_DEMO_PORT (default 4646) is the dev agent's API port.
set -euo pipefail

cd "$(dirname "$0")/.."
REPO="$(pwd)"

if [[ "$(id -u)" != 0 ]]; then
  echo "demo-docker: dockerd and the plugin's bind mounts need root (e.g. sudo npm run demo:docker)" >&2
  exit 1
fi

PORT="${BERTH_DEMO_PORT:-4646}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/berth-dk.XXXXXX")"
RIG="$WORK/docker"
DATA_DIR="$WORK/agent"
AGENT_OUT="$WORK/agent.out"
AGENT_LOG="$WORK/agent.log"
AGENT_PID=""
STEP="setting up"
HOSTPATH_DIR=""
unset BERTH_ADDR BERTH_TOKEN

DEMO=demo-docker
# shellcheck source=scripts/_demo-lib.sh
source "$REPO/scripts/_demo-lib.sh"

# Docker 20.10's own CLI, against the private dockerd.
docker() { DOCKER_HOST="unix://$RIG/docker.sock" /usr/bin/docker "$@"; }

cleanup() {
  local status=$?
  set +e
  trap - INT TERM
  if [[ $status != 0 ]]; then
    echo >&2
    echo "demo-docker: failed (exit $status) during \"$STEP\"; stopping the agent and the private Docker, removing $WORK" >&2
    if [[ -s "$AGENT_LOG" ]]; then
      echo "demo-docker: last agent log lines:" >&2
      tail -n 15 "$AGENT_LOG" >&2
    fi
  fi
  if agent_alive; then
    stop_agent 60
  fi
  # Removes every container, stops dockerd and the registry, unmounts and removes $RIG.
  [[ -f "$RIG/rig.json" ]] && node "$REPO/scripts/docker-rig.mjs" stop "$RIG"
  mounts_under "$WORK" | sort -r | while read -r mount; do
    umount -l "$mount" 2>/dev/null
  done
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

job_running() { [[ "$(alloc_status "$1" 2>/dev/null)" == running ]]; }

step "Start a private Docker (dockerd and a registry) and build the images"
[[ -d "$REPO/dist" ]] || run node "$REPO/scripts/build.mjs"
run node "$REPO/scripts/ensure-docker.mjs" >/dev/null || fail "docker.io, docker-registry and busybox-static are needed"
run node "$REPO/scripts/docker-rig.mjs" start "$RIG" "$WORK/docker.env" || fail "could not start the private dockerd"
run node "$REPO/scripts/docker-rig.mjs" plugin-image "$RIG" berth/hostpath-plugin:dev || fail "could not build the plugin image"
DOCKER_HOST_URL="unix://$RIG/docker.sock"
run docker images

step "Start a dev agent with the docker driver configured"
cat >"$WORK/agent.hcl" <<EOF
plugin "docker" {
  config {
    endpoint         = "$DOCKER_HOST_URL"
    allow_privileged = true
    infra_image      = "gcr.io/google_containers/pause-amd64:3.1"

    volumes {
      enabled = true
    }
  }
}
EOF
sed 's/^/  /' "$WORK/agent.hcl"
printf '%s$ berth agent --dev --port %s --data-dir %s --config %s &%s\n' "$DIM" "$PORT" "$DATA_DIR" "$WORK/agent.hcl" "$RESET"
node "$REPO/bin/berth.js" agent --dev --port "$PORT" --data-dir "$DATA_DIR" --config "$WORK/agent.hcl" >"$AGENT_OUT" 2>"$AGENT_LOG" &
AGENT_PID=$!
for _ in $(seq 1 120); do
  grep -q '^BERTH_TOKEN=' "$AGENT_OUT" 2>/dev/null && break
  agent_alive || { tail -n 20 "$AGENT_LOG" >&2; fail "the agent exited before it was ready"; }
  sleep 0.5
done
grep -q '^BERTH_TOKEN=' "$AGENT_OUT" || fail "the agent printed no BERTH_ADDR/BERTH_TOKEN within 60s"
BERTH_ADDR="$(sed -n 's/^BERTH_ADDR=//p' "$AGENT_OUT" | tail -n 1)"
BERTH_TOKEN="$(sed -n 's/^BERTH_TOKEN=//p' "$AGENT_OUT" | tail -n 1)"
export BERTH_ADDR BERTH_TOKEN
echo "  agent running (pid $AGENT_PID), data in $DATA_DIR"
run berth node status
NODE_ID="$(berth node status --json | json 'j[0]?.ID')"
[[ -n "$NODE_ID" ]] || fail "the agent's node did not register"
HOSTPATH_DIR="/var/lib/berth/hostpath/$NODE_ID"
echo "  the node's docker driver (GET /v1/node/:id, Drivers.docker):"
berth node status "$NODE_ID" --json |
  json '((d) => d ? [`healthy ${d.Healthy} (${d.HealthDescription})`, ...Object.entries(d.Attributes ?? {}).sort().map(([k, v]) => `${k} = ${v}`)].map((l) => `    ${l}`).join("\n") : "    (no docker driver on this node)")(j.Drivers?.docker)'
echo

step "Run the hostpath CSI plugin as a privileged docker job"
run berth job run -detach examples/docker/hostpath-plugin.hcl || fail "berth job run examples/docker/hostpath-plugin.hcl"
wait_for "the hostpath plugin to be healthy" 120 plugin_healthy
run berth plugin status hostpath
run docker ps --format 'table {{.Names}}\t{{.Image}}\t{{.Status}}'

step "Create a volume through the plugin's controller"
run berth volume create examples/volume.hcl || fail "berth volume create examples/volume.hcl"

step "Run a docker job that writes into the volume"
run berth job run -detach examples/docker/writer.hcl || fail "berth job run examples/docker/writer.hcl"
wait_for "the writer to complete" 120 job_finished writer
WRITER_ALLOC="$(alloc_id writer)"
run berth job stop writer

step "Run a docker job that reads the data back"
run berth job run -detach examples/docker/reader.hcl || fail "berth job run examples/docker/reader.hcl"
wait_for "the reader to complete" 120 job_finished reader
READER_ALLOC="$(alloc_id reader)"
run berth alloc logs "${READER_ALLOC:0:8}" read
READ_BACK="$(berth alloc logs "$READER_ALLOC" read)" || fail "berth alloc logs $READER_ALLOC"
grep -q "written by $WRITER_ALLOC" <<<"$READ_BACK" || fail "the reader did not read what the writer ($WRITER_ALLOC) wrote"
echo "  the reader read what writer allocation ${WRITER_ALLOC:0:8} wrote"
run berth job stop reader

step "Run a web server in a container and fetch its page"
run berth job run -detach examples/docker/web.hcl || fail "berth job run examples/docker/web.hcl"
wait_for "the web server to run" 120 job_running web
WEB_ALLOC="$(alloc_id web)"
WEB_PORT="$(berth alloc status "$WEB_ALLOC" --json | json '(j.AllocatedResources.Shared.Ports ?? []).find((p) => p.Label === "http")?.Value')"
[[ -n "$WEB_PORT" ]] || fail "the allocation has no http port"
page() { node -e 'fetch(process.argv[1]).then(async (r) => { if (!r.ok) process.exit(1); process.stdout.write(await r.text()); }).catch(() => process.exit(1))' "http://127.0.0.1:$WEB_PORT/"; }
wait_for "the page on 127.0.0.1:$WEB_PORT" 60 page >/dev/null
printf '%s$ curl http://127.0.0.1:%s/%s\n' "$DIM" "$WEB_PORT" "$RESET"
page
run berth job stop web

step "Delete the volume (DeleteVolume through the controller)"
run berth volume delete shared-data || fail "berth volume delete shared-data"

step "Stop the agent (Ctrl-C) and check that nothing is left"
printf '%s$ kill -INT %s%s\n' "$DIM" "$AGENT_PID" "$RESET"
stop_agent 120
[[ "$AGENT_EXIT" == 0 ]] || fail "the agent exited with code $AGENT_EXIT on SIGINT"
echo "  agent stopped (exit 0)"
left="$(mounts_under "$DATA_DIR")"
[[ -z "$left" ]] || { echo "$left" | sed 's/^/  still mounted: /' >&2; fail "mounts are left under $DATA_DIR"; }
echo "  nothing mounted under $DATA_DIR"
containers="$(docker ps -aq)"
[[ -z "$containers" ]] || { docker ps -a >&2; fail "containers are left"; }
echo "  no container left (docker ps -a is empty)"
if [[ -d "$HOSTPATH_DIR" ]] && [[ -z "$(ls -A "$HOSTPATH_DIR/volumes" 2>/dev/null)" ]]; then
  rm -rf "$HOSTPATH_DIR"
  echo "  removed the plugin's empty data dir $HOSTPATH_DIR"
fi

STEP="done"
printf '\n%s==> Done: the container quick start ran end to end%s\n' "$BOLD" "$RESET"
