#!/usr/bin/env bash
# Berth quick-start demo (`npm run demo`): runs Berth's hostpath CSI plugin in
# the background and drives one volume through its life with `berth csi`,
# the way an orchestrator does: create, stage, publish, use, unpublish,
# unstage, delete. Needs root (the plugin makes real bind mounts) and Node 20.
# Everything lives in a temporary directory that is removed on exit, even
# when a step fails or the demo is interrupted.
set -euo pipefail

cd "$(dirname "$0")/.."

if [[ "$(id -u)" != 0 ]]; then
  echo "demo: the hostpath plugin makes bind mounts, so run this as root (e.g. sudo npm run demo)" >&2
  exit 1
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/berth-demo.XXXXXX")"
SOCK="$WORK/csi.sock"
DATA="$WORK/data"
STAGING="$WORK/staging/demo-vol"
TARGET="$WORK/alloc/web/data"
export CSI_ENDPOINT="unix://$SOCK"

PLUGIN_PID=""
VOLUME_ID=""
STAGED=""
PUBLISHED=""

if [[ -t 1 ]]; then BOLD=$'\e[1m' DIM=$'\e[2m' RESET=$'\e[0m'; else BOLD="" DIM="" RESET=""; fi

berth() { node bin/berth.js "$@"; }

step() { printf '\n%s==> %s%s\n' "$BOLD" "$*" "$RESET"; }

# Shows the command, then runs it.
run() {
  printf '%s$ %s%s\n' "$DIM" "$*" "$RESET"
  "$@"
}

mounts_under() { awk -v dir="$1/" 'index($5, dir) == 1 { print "  " $5 }' /proc/self/mountinfo; }

cleanup() {
  local status=$?
  set +e
  trap - INT TERM
  if [[ $status != 0 ]]; then
    echo >&2
    echo "demo: failed (exit $status); tearing down what was set up" >&2
    if [[ -s "$WORK/plugin.log" ]]; then
      echo "demo: last plugin log lines:" >&2
      tail -n 5 "$WORK/plugin.log" >&2
    fi
  fi
  # Undo the steps that were done, newest first, as a CO would.
  if [[ -n "$PLUGIN_PID" ]] && kill -0 "$PLUGIN_PID" 2>/dev/null; then
    [[ -n "$PUBLISHED" ]] && berth csi unpublish "$VOLUME_ID" --target-path "$TARGET" >/dev/null 2>&1
    [[ -n "$STAGED" ]] && berth csi unstage "$VOLUME_ID" --staging-path "$STAGING" >/dev/null 2>&1
    [[ -n "$VOLUME_ID" ]] && berth csi delete-volume "$VOLUME_ID" >/dev/null 2>&1
    kill -TERM "$PLUGIN_PID" 2>/dev/null
    for _ in $(seq 1 50); do
      kill -0 "$PLUGIN_PID" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$PLUGIN_PID" 2>/dev/null
    wait "$PLUGIN_PID" 2>/dev/null
  fi
  # Last resort: nothing may stay mounted under the demo directory.
  awk -v dir="$WORK/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r mount; do
    umount -l "$mount" 2>/dev/null
  done
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "Start the hostpath CSI plugin in the background"
echo "  endpoint  $CSI_ENDPOINT"
echo "  data dir  $DATA"
printf '%s$ berth plugin hostpath --node-id demo-node --data-dir %s --no-publish-unpublish &%s\n' "$DIM" "$DATA" "$RESET"
# node itself, not the berth function: $! must be the plugin's own pid.
node bin/berth.js plugin hostpath --node-id demo-node --data-dir "$DATA" --no-publish-unpublish 2>"$WORK/plugin.log" &
PLUGIN_PID=$!

for _ in $(seq 1 100); do
  [[ -S "$SOCK" ]] && break
  if ! kill -0 "$PLUGIN_PID" 2>/dev/null; then
    echo "demo: the plugin exited before its socket appeared" >&2
    exit 1
  fi
  sleep 0.2
done
[[ -S "$SOCK" ]] || { echo "demo: no plugin socket at $SOCK after 20s" >&2; exit 1; }
echo "  plugin running (pid $PLUGIN_PID); berth csi finds it through \$CSI_ENDPOINT"

step "Who is the plugin? (GetPluginInfo, GetPluginCapabilities)"
run berth csi info

step "What can it do? (controller and node capabilities)"
run berth csi capabilities

step "Which node is this? (NodeGetInfo)"
run berth csi node-info

step "Create a 100 MiB volume (CreateVolume)"
printf '%s$ berth csi create-volume demo-vol --size 100MiB%s\n' "$DIM" "$RESET"
created="$(berth csi create-volume demo-vol --size 100MiB)"
echo "$created"
VOLUME_ID="$(sed -n 's/^volume id  *//p' <<<"$created")"
[[ -n "$VOLUME_ID" ]] || { echo "demo: create-volume printed no volume id" >&2; exit 1; }

step "Stage it on this node (NodeStageVolume; berth creates the staging directory)"
run berth csi stage "$VOLUME_ID" --staging-path "$STAGING"
STAGED=1

step "Publish it where a workload would see it (NodePublishVolume)"
run berth csi publish "$VOLUME_ID" --staging-path "$STAGING" --target-path "$TARGET"
PUBLISHED=1
echo "mounts under $WORK:"
mounts_under "$WORK"

step "Write a file through the target, and find it in the volume"
printf "%s\$ echo 'hello from a berth workload' > %s/hello.txt%s\n" "$DIM" "$TARGET" "$RESET"
echo 'hello from a berth workload' >"$TARGET/hello.txt"
in_volume="$(find "$DATA" -type f -name hello.txt)"
echo "found in the volume: $in_volume"
run cat "$in_volume"

step "Unpublish it (NodeUnpublishVolume)"
run berth csi unpublish "$VOLUME_ID" --target-path "$TARGET"
PUBLISHED=""

step "Unstage it (NodeUnstageVolume)"
run berth csi unstage "$VOLUME_ID" --staging-path "$STAGING"
STAGED=""
echo "mounts under $WORK:"
mounts_under "$WORK" | grep . || echo "  (none)"

step "Delete it (DeleteVolume)"
run berth csi delete-volume "$VOLUME_ID"
VOLUME_ID=""

step "Done: the plugin stops and the demo directory is removed"
