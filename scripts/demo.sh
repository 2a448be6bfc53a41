#!/usr/bin/env bash
# Berth quick-start demo (`npm run demo`). With the real `berth` command it:
#   1. starts a dev agent (`berth agent --dev`: server and client in one
#      process, API on 127.0.0.1) in the background and reads its address and
#      management token;
#   2. runs the hostpath CSI plugin as a system job (examples/hostpath-plugin.hcl)
#      and waits until `berth plugin status hostpath` shows it healthy;
#   3. creates a volume through the plugin's controller (examples/volume.hcl);
#   4. runs a batch job that writes into the volume (examples/writer.hcl),
#      waits for it to complete and stops it;
#   5. runs a second job that reads the data back (examples/reader.hcl) and
#      shows its output with `berth alloc logs`;
#   6. prints `plugin status`, `volume status` and the volume's claim history
#      (`berth event stream --index 0 --until-now`: no timer, it ends by itself);
#   7. deletes the volume, stops the agent with Ctrl-C (SIGINT) and checks
#      that nothing is left mounted under the agent's data directory.
# Every step has a heading; a failing step names itself and the demo exits
# non-zero. Whatever happens, the agent is stopped and the demo's directory
# removed (trap). Needs root (the plugin makes real bind mounts) and Node 20;
# needs no terminal.
#
# Environment: BERTH_DEMO_PORT (default 4646) is the dev agent's API port.
set -euo pipefail

cd "$(dirname "$0")/.."
REPO="$(pwd)"

if [[ "$(id -u)" != 0 ]]; then
  echo "demo: the hostpath plugin makes bind mounts, so run this as root (e.g. sudo npm run demo)" >&2
  exit 1
fi

PORT="${BERTH_DEMO_PORT:-4646}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/berth-demo.XXXXXX")"
DATA_DIR="$WORK/agent"
AGENT_OUT="$WORK/agent.out"
AGENT_LOG="$WORK/agent.log"
AGENT_PID=""
STEP="setting up"
HOSTPATH_DIR=""
# The agent and the CLI must not pick up a caller's address or token.
unset BERTH_ADDR BERTH_TOKEN

DEMO=demo
# shellcheck source=scripts/_demo-lib.sh
source "$REPO/scripts/_demo-lib.sh"

cleanup() {
  local status=$?
  set +e
  trap - INT TERM
  if [[ $status != 0 ]]; then
    echo >&2
    echo "demo: failed (exit $status) during \"$STEP\"; stopping the agent and removing $WORK" >&2
    if [[ -s "$AGENT_LOG" ]]; then
      echo "demo: last agent log lines:" >&2
      tail -n 15 "$AGENT_LOG" >&2
    fi
  fi
  if agent_alive; then
    stop_agent 60
  fi
  # Last resort: nothing may stay mounted under the demo directory.
  mounts_under "$WORK" | sort -r | while read -r mount; do
    umount -l "$mount" 2>/dev/null
  done
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "Start a dev agent (server and client in one process)"
printf '%s$ berth agent --dev --port %s --data-dir %s &%s\n' "$DIM" "$PORT" "$DATA_DIR" "$RESET"
# node itself, not the berth function: $! must be the agent's own pid.
node "$REPO/bin/berth.js" agent --dev --port "$PORT" --data-dir "$DATA_DIR" >"$AGENT_OUT" 2>"$AGENT_LOG" &
AGENT_PID=$!
for _ in $(seq 1 120); do
  grep -q '^BERTH_TOKEN=' "$AGENT_OUT" 2>/dev/null && break
  agent_alive || { tail -n 20 "$AGENT_LOG" >&2; fail "the agent exited before it was ready"; }
  sleep 0.5
done
grep -q '^BERTH_TOKEN=' "$AGENT_OUT" || fail "the agent printed no BERTH_ADDR/BERTH_TOKEN within 60s"
BERTH_ADDR="$(sed -n 's/^BERTH_ADDR=//p' "$AGENT_OUT" | tail -n 1)"
BERTH_TOKEN="$(sed -n 's/^BERTH_TOKEN=//p' "$AGENT_OUT" | tail -n 1)"
[[ -n "$BERTH_ADDR" && -n "$BERTH_TOKEN" ]] || fail "the agent's BERTH_ADDR/BERTH_TOKEN lines are empty"
export BERTH_ADDR BERTH_TOKEN
echo "  agent running (pid $AGENT_PID), data in $DATA_DIR"
echo "  BERTH_ADDR=$BERTH_ADDR"
echo "  BERTH_TOKEN=<management token, in $DATA_DIR/agent.env>"
run berth node status
NODE_ID="$(berth node status --json | json 'j[0]?.ID')"
[[ -n "$NODE_ID" ]] || fail "the agent's node did not register"
# examples/hostpath-plugin.hcl keeps its volumes under /var/lib/berth/hostpath/<node ID>.
HOSTPATH_DIR="/var/lib/berth/hostpath/$NODE_ID"

step "Run the hostpath CSI plugin as a system job"
run berth job run examples/hostpath-plugin.hcl || fail "berth job run examples/hostpath-plugin.hcl"

step "Wait until the plugin is healthy"
wait_for "the hostpath plugin to be healthy" 60 plugin_healthy
run berth plugin status hostpath

step "Create a volume through the plugin's controller"
run berth volume create examples/volume.hcl || fail "berth volume create examples/volume.hcl"

step "Run a job that writes into the volume"
run berth job run examples/writer.hcl || fail "berth job run examples/writer.hcl"
wait_for "the writer to complete" 60 job_finished writer
run berth job status writer
WRITER_ALLOC="$(alloc_id writer)"

step "Stop the writer (its claim on the volume is released)"
run berth job stop writer

step "Run a job that reads the data back"
run berth job run examples/reader.hcl || fail "berth job run examples/reader.hcl"
wait_for "the reader to complete" 60 job_finished reader
READER_ALLOC="$(alloc_id reader)"
run berth alloc logs "${READER_ALLOC:0:8}" read
READ_BACK="$(berth alloc logs "$READER_ALLOC" read)" || fail "berth alloc logs $READER_ALLOC"
grep -q "written by $WRITER_ALLOC" <<<"$READ_BACK" || fail "the reader did not read what the writer ($WRITER_ALLOC) wrote"
echo "  the reader read what writer allocation ${WRITER_ALLOC:0:8} wrote"

step "Plugin status"
run berth plugin status
run berth plugin status hostpath

step "Volume status"
run berth volume status
run berth volume status shared-data
echo
echo "Claim history of shared-data (from the event stream):"
printf '%s$ berth event stream --topic claim:shared-data --index 0 --until-now --json%s\n' "$DIM" "$RESET"
# --until-now: the stream ends once it has printed every change up to now.
# One frame a line: {"Index":N,"Events":[{"Topic":"claim","Type":"ClaimUpserted","Payload":{"Claim":{"VolumeID":...,"AllocationID":...,"Mode":...,"State":...}}}]}.
berth event stream --topic claim:shared-data --index 0 --until-now --json |
  node -e '
    const lines = require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean);
    console.log("  Index  Op      Alloc ID  Mode   State");
    for (const line of lines) {
      for (const e of JSON.parse(line).Events ?? []) {
        const c = e.Payload.Claim ?? {};
        if (e.Namespace !== "default" || c.VolumeID !== "shared-data") continue;
        const op = e.Type === "ClaimDeleted" ? "delete" : "put";
        const state = op === "delete" ? "released" : (c.State ?? "-");
        console.log(`  ${String(e.Index).padEnd(5)}  ${op.padEnd(6)}  ${String(c.AllocationID).slice(0, 8)}  ${(c.Mode ?? "-").padEnd(5)}  ${state}`);
      }
    }'


step "Delete the volume (DeleteVolume through the controller)"
run berth volume delete shared-data || fail "berth volume delete shared-data"

step "Stop the agent (Ctrl-C) and check that nothing is left mounted"
printf '%s$ kill -INT %s%s\n' "$DIM" "$AGENT_PID" "$RESET"
stop_agent 90
[[ "$AGENT_EXIT" == 0 ]] || fail "the agent exited with code $AGENT_EXIT on SIGINT"
echo "  agent stopped (exit 0)"
left="$(mounts_under "$DATA_DIR")"
if [[ -n "$left" ]]; then
  echo "$left" | sed 's/^/  still mounted: /' >&2
  fail "mounts are left under $DATA_DIR"
fi
echo "  nothing mounted under $DATA_DIR"
# The dev node's ID is new on every run: remove the plugin's directory for it
# once it holds no volume (the demo deleted its own).
if [[ -d "$HOSTPATH_DIR" ]] && [[ -z "$(ls -A "$HOSTPATH_DIR/volumes" 2>/dev/null)" ]]; then
  rm -rf "$HOSTPATH_DIR"
  echo "  removed the plugin's empty data dir $HOSTPATH_DIR"
fi

STEP="done"
printf '\n%s==> Done: the quick start ran end to end%s\n' "$BOLD" "$RESET"
