# Shell functions the quick-start demos share (scripts/demo.sh,
# scripts/demo-docker.sh), sourced after they set DEMO (the name in their
# messages), REPO, AGENT_PID, AGENT_LOG and STEP.

if [[ -t 1 ]]; then BOLD=$'\e[1m' DIM=$'\e[2m' RESET=$'\e[0m'; else BOLD="" DIM="" RESET=""; fi

berth() { node "$REPO/bin/berth.js" "$@"; }

step() {
  STEP="$*"
  printf '\n%s==> %s%s\n' "$BOLD" "$*" "$RESET"
}

# Shows the command, then runs it.
run() {
  printf '%s$ %s%s\n' "$DIM" "$*" "$RESET"
  "$@"
}

fail() {
  echo "$DEMO: step \"$STEP\" failed: $*" >&2
  exit 1
}

# Evaluates a JavaScript expression over the JSON document on stdin (`j`).
json() { node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8")); const v = ('"$1"'); process.stdout.write(v === undefined ? "" : String(v));'; }

mounts_under() { awk -v dir="$1/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo; }

agent_alive() { [[ -n "$AGENT_PID" ]] && kill -0 "$AGENT_PID" 2>/dev/null; }

# Sends SIGINT (Ctrl-C) to the agent and waits up to $1 seconds for it to
# exit; sets AGENT_EXIT to its exit code. Not in a subshell: `wait` needs the
# agent to be our own child.
AGENT_EXIT=""
stop_agent() {
  local limit=$1 code=0
  kill -INT "$AGENT_PID" 2>/dev/null || true
  for _ in $(seq 1 $((limit * 5))); do
    agent_alive || break
    sleep 0.2
  done
  if agent_alive; then
    echo "$DEMO: the agent did not stop within ${limit}s; killing it" >&2
    kill -KILL "$AGENT_PID" 2>/dev/null || true
  fi
  wait "$AGENT_PID" 2>/dev/null || code=$?
  AGENT_PID=""
  AGENT_EXIT=$code
}

# Waits (polling every 0.5 s, at most $2 seconds) until the command $3... succeeds.
wait_for() {
  local what=$1 limit=$2
  shift 2
  for _ in $(seq 1 $((limit * 2))); do
    if "$@"; then return 0; fi
    agent_alive || fail "the agent exited while waiting for $what"
    sleep 0.5
  done
  fail "timed out after ${limit}s waiting for $what"
}

plugin_healthy() {
  local doc placed
  # A plugin job the scheduler cannot place (no healthy driver for it on the node) will not come right by waiting.
  placed="$(berth job status hostpath-plugin --json 2>/dev/null | json '(j[0]?.Allocations ?? []).length')" || placed=""
  if [[ "$placed" == 0 ]] && berth eval list --job hostpath-plugin --json 2>/dev/null | json 'j.some((e) => Object.keys(e.FailedTGAllocs ?? {}).length > 0)' | grep -q true; then
    berth job status hostpath-plugin >&2
    fail "the plugin job cannot be placed"
  fi
  doc="$(berth plugin status hostpath --json 2>/dev/null)" || return 1
  [[ "$(json 'j.ControllersHealthy >= 1 && j.NodesHealthy >= 1' <<<"$doc")" == true ]]
}

# The client status of job $1's newest allocation (`job status -json` prints Nomad's: a list of one job, its Allocations as AllocationListStub).
alloc_status() { berth job status "$1" --json | json 'j[0].Allocations.sort((a, b) => b.CreateIndex - a.CreateIndex)[0]?.ClientStatus'; }
alloc_id() { berth job status "$1" --json | json 'j[0].Allocations.sort((a, b) => b.CreateIndex - a.CreateIndex)[0]?.ID'; }

job_finished() {
  local st
  st="$(alloc_status "$1")" || return 1
  case "$st" in
    complete) return 0 ;;
    failed | lost) berth job status "$1" >&2; fail "job $1 ended $st" ;;
    *) return 1 ;;
  esac
}
