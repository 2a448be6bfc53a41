#!/usr/bin/env bash
# Nomad's own CLI against a Berth dev agent: issue 36's check by hand that a
# client nobody here wrote can use Berth's API (Nomad's /v1 HTTP API).
#
#   sudo NOMAD_BIN=/path/to/nomad scripts/nomad-cli-check.sh
#
# NOMAD_BIN is a Nomad CLI binary you already have (Nomad 1.1.2 is the
# version issue 36 names; any 1.x works, and commands a version lacks are
# reported as `skip`). This script builds nothing and downloads nothing.
#
# It starts `berth agent --dev` (this checkout's bin/berth.js; build it first
# with `npm run build`) on a free port of 127.0.0.1, points NOMAD_ADDR and
# NOMAD_TOKEN at it (every other NOMAD_* variable of the caller is unset, so
# nothing is sent anywhere else), writes small job and volume files of its own
# into a temporary directory (raw_exec jobs, the hostpath CSI plugin Berth
# ships, a CSI volume) and runs Nomad's everyday commands against the agent.
# For each command it prints one line
#
#   ok|FAIL|skip <command>: <first line of its output or error>
#
# then a summary. A step that needs what an earlier one could not make (an
# allocation, a deployment, a healthy plugin) is `FAIL ...: not run: <why>`.
# The IDs it passes to the CLI come from the API (GET /v1/...), as a script of
# a user's would take them. Whatever happens, the agent is stopped (SIGINT),
# nothing is left mounted, the temporary directory is removed.
#
# Needs root (the hostpath plugin makes real bind mounts), Node 20 and
# coreutils' `timeout`.
#
# Environment:
#   NOMAD_BIN              the Nomad CLI (required)
#   NOMAD_CHECK_TIMEOUT    seconds one command may take (default 60)
#   NOMAD_CHECK_LOG_DIR    if set, every command's whole output is kept there
#   NOMAD_CHECK_VERBOSE=1  print a failed command's whole output, indented
#
# Exit code: 0 when no command failed, 1 otherwise, 2 when it could not start.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
REPO="$(pwd)"
TIMEOUT="${NOMAD_CHECK_TIMEOUT:-60}"
LOG_DIR="${NOMAD_CHECK_LOG_DIR:-}"
VERBOSE="${NOMAD_CHECK_VERBOSE:-}"

die() {
  echo "nomad-cli-check: $*" >&2
  exit 2
}

[[ -n "${NOMAD_BIN:-}" ]] || die "set NOMAD_BIN to a Nomad CLI binary (e.g. NOMAD_BIN=\$HOME/bin/nomad $0)"
[[ -x "$NOMAD_BIN" ]] || die "NOMAD_BIN=$NOMAD_BIN is not an executable file"
NOMAD_BIN="$(cd "$(dirname "$NOMAD_BIN")" && pwd)/$(basename "$NOMAD_BIN")"
[[ "$(id -u)" == 0 ]] || die "the hostpath CSI plugin makes bind mounts: run this as root"
[[ -f "$REPO/dist/main.js" ]] || die "dist/main.js is missing: run \`npm run build\` first"
command -v timeout >/dev/null || die "needs coreutils' timeout"

# Nothing of the caller's Nomad or Berth settings may reach the CLI or the
# agent: the CLI talks to the dev agent on loopback and nowhere else.
for v in $(compgen -e); do
  case "$v" in NOMAD_BIN | NOMAD_CHECK_*) ;; NOMAD_* | BERTH_* | CONSUL_HTTP_* | VAULT_*) unset "$v" ;; esac
done
export NOMAD_CLI_NO_COLOR=1

NOMAD_VERSION="$("$NOMAD_BIN" version 2>/dev/null | head -n 1)"
[[ "$NOMAD_VERSION" == Nomad\ v* ]] || die "$NOMAD_BIN version did not print 'Nomad v...' (got: ${NOMAD_VERSION:-nothing})"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/berth-nomad-cli.XXXXXX")"
DATA_DIR="$WORK/agent"
AGENT_PID=""
NODE_ID=""
AGENT_NODE_ID=""
HOSTPATH_ROOT=/var/lib/berth/hostpath
mkdir -p "$WORK/out" "$WORK/jobs"
[[ -z "$LOG_DIR" ]] || mkdir -p "$LOG_DIR"

mounts_under() { awk -v dir="$1/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo; }
agent_alive() { [[ -n "$AGENT_PID" ]] && kill -0 "$AGENT_PID" 2>/dev/null; }

cleanup() {
  local status=$?
  set +e
  trap - INT TERM
  if agent_alive; then
    # Our agent's node (Nomad's list shape, or Berth's older one), for the plugin's directory below.
    [[ -n "$AGENT_NODE_ID" ]] || AGENT_NODE_ID="$(api /v1/nodes 'j[0]?.ID ?? j[0]?.id' 2>/dev/null)"
    # Jobs first, so the agent's stop has no task and no claim left to undo.
    for job in sleeper writer hostpath-plugin; do
      timeout 30 "$NOMAD_BIN" job stop -purge -detach "$job" >/dev/null 2>&1
    done
    kill -INT "$AGENT_PID" 2>/dev/null
    for _ in $(seq 1 450); do
      agent_alive || break
      sleep 0.2
    done
    if agent_alive; then
      echo "nomad-cli-check: the agent did not stop within 90s; killing it" >&2
      kill -KILL "$AGENT_PID" 2>/dev/null
    fi
    wait "$AGENT_PID" 2>/dev/null
  fi
  mounts_under "$WORK" | sort -r | while read -r mount; do umount -l "$mount" 2>/dev/null; done
  # The hostpath plugin keeps its volumes under a directory per node ID, new
  # on every dev agent: remove our agent's when it holds no volume.
  local dir="$HOSTPATH_ROOT/$AGENT_NODE_ID"
  if [[ "$AGENT_NODE_ID" =~ ^[0-9a-f-]{36}$ && -d "$dir" ]]; then
    if [[ -z "$(ls -A "$dir/volumes" 2>/dev/null)" ]]; then
      rm -rf "$dir"
    else
      echo "nomad-cli-check: left $dir: it holds volumes this run did not delete" >&2
    fi
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- the dev agent -----------------------------------------------------------

PORT="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });')"
node "$REPO/bin/berth.js" agent --dev --port "$PORT" --data-dir "$DATA_DIR" >"$WORK/agent.out" 2>"$WORK/agent.log" &
AGENT_PID=$!
for _ in $(seq 1 120); do
  grep -q '^BERTH_TOKEN=' "$WORK/agent.out" 2>/dev/null && break
  agent_alive || { tail -n 20 "$WORK/agent.log" >&2; die "the agent exited before it was ready"; }
  sleep 0.5
done
NOMAD_ADDR="$(sed -n 's/^BERTH_ADDR=//p' "$WORK/agent.out" | tail -n 1)"
NOMAD_TOKEN="$(sed -n 's/^BERTH_TOKEN=//p' "$WORK/agent.out" | tail -n 1)"
[[ -n "$NOMAD_ADDR" && -n "$NOMAD_TOKEN" ]] || die "the agent printed no BERTH_ADDR/BERTH_TOKEN within 60s"
[[ "$NOMAD_ADDR" =~ ^https?://(127\.[0-9.]+|localhost|\[::1\]):[0-9]+$ ]] || die "the agent's address $NOMAD_ADDR is not on loopback"
export NOMAD_ADDR NOMAD_TOKEN

echo "Nomad CLI: $NOMAD_VERSION ($NOMAD_BIN)"
echo "Berth:     $(git -C "$REPO" log -1 --format='%h %s' 2>/dev/null | cut -c1-100)"
echo "Agent:     $NOMAD_ADDR (dev, pid $AGENT_PID)"
echo

# --- checks ------------------------------------------------------------------

OK=0
FAILED=0
SKIPPED=0
N=0
LAST_OUT=""

# The command as printed: paths in our temp dir by their name, UUIDs by
# their first 8 characters (as Nomad's CLI shows them).
label() {
  local s="$*"
  s="${s//$WORK\/jobs\//}"
  sed -E 's/([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/\1/g' <<<"$s"
}

first_line() { grep -m 1 -v '^[[:space:]]*$' "$1" | sed -E 's/^[[:space:]]+//' | cut -c 1-160; }

report() {
  local verdict=$1 name=$2 text=$3
  printf '%s %s: %s\n' "$verdict" "$name" "$text"
  case "$verdict" in ok) OK=$((OK + 1)) ;; FAIL) FAILED=$((FAILED + 1)) ;; skip) SKIPPED=$((SKIPPED + 1)) ;; esac
}

# check ARGS... [--codes "0 1"] [--expect REGEX]: runs `nomad ARGS...`
# (stdin closed, at most $TIMEOUT seconds). ok when it exits with one of
# --codes (default 0) and, with --expect, its output matches REGEX (grep -E).
# (Nomad's flags have one dash: --codes and --expect are never Nomad's.)
check() {
  local codes="0" expect=""
  local -a args=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --codes) codes=$2; shift 2 ;;
      --expect) expect=$2; shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  set -- "${args[@]}"
  local name
  name="$(label "$@")"
  N=$((N + 1))
  local out
  out="$WORK/out/$(printf '%02d' "$N")-$(tr -c 'A-Za-z0-9.-' '_' <<<"$name" | cut -c 1-60).txt"
  LAST_OUT=$out
  local code=0
  timeout --kill-after=5 "$TIMEOUT" "$NOMAD_BIN" "$@" >"$out" 2>&1 </dev/null || code=$?
  [[ -z "$LOG_DIR" ]] || { printf '$ nomad %s\n(exit %s)\n' "$name" "$code"; cat "$out"; } >"$LOG_DIR/$(basename "$out")"
  local first
  first="$(first_line "$out")"
  if [[ $code == 124 || $code == 137 ]]; then
    report FAIL "$name" "timed out after ${TIMEOUT}s${first:+: $first}"
  elif [[ " $codes " != *" $code "* ]]; then
    report FAIL "$name" "exit $code: ${first:-no output}"
  elif [[ -n "$expect" ]] && ! grep -qE -- "$expect" "$out"; then
    report FAIL "$name" "exit $code but no /$expect/ in its output: ${first:-no output}"
  else
    report ok "$name" "${first:-(no output)}"
    return 0
  fi
  if [[ -n "$VERBOSE" ]]; then sed 's/^/    | /' "$out"; fi
  return 1
}

# A step that cannot run because an earlier one failed.
not_run() { report FAIL "$(label "$1")" "not run: $2"; }

# has_command "service list" WHY: true when this CLI has the command;
# otherwise prints a skip line (WHY) and returns 1.
has_command() {
  local words=$1 why=$2
  # shellcheck disable=SC2086 # the command's words are meant to split
  if "$NOMAD_BIN" $words -h 2>&1 | head -n 1 | grep -q "^Usage: nomad $words"; then return 0; fi
  report skip "$words" "not in this CLI ($NOMAD_VERSION): $why"
  return 1
}

# api PATH EXPR: GETs $NOMAD_ADDR/PATH with the token and prints JavaScript
# EXPR over the JSON answer `j` (nothing when the call or EXPR fails).
api() {
  node -e '
    const [path, expr] = process.argv.slice(1);
    fetch(process.env.NOMAD_ADDR + path, { headers: { "X-Nomad-Token": process.env.NOMAD_TOKEN } })
      .then((r) => (r.ok ? r.json() : undefined))
      .then((j) => {
        if (j === undefined) return;
        const v = new Function("j", `return (${expr});`)(j);
        if (v !== undefined && v !== null) process.stdout.write(String(v));
      })
      .catch(() => {});
  ' "$1" "$2" 2>/dev/null
}

# wait_for SECONDS COMMAND...: polls every 0.5 s until COMMAND succeeds, for
# at most SECONDS of wall-clock time.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  while ((SECONDS < deadline)); do
    if "$@"; then return 0; fi
    agent_alive || return 1
    sleep 0.5
  done
  return 1
}

# The newest allocation of job $1 whose ClientStatus is $2.
newest_alloc() { api "/v1/job/$1/allocations" "j.filter((a) => a.ClientStatus === '$2').sort((a, b) => b.CreateIndex - a.CreateIndex)[0]?.ID"; }
has_alloc() { [[ -n "$(newest_alloc "$1" "$2")" ]]; }
canary_healthy() { [[ "$(api "/v1/deployment/$1" "Object.values(j.TaskGroups ?? {}).every((g) => g.HealthyAllocs >= Math.max(1, g.DesiredCanaries))")" == true ]]; }
plugin_healthy() { [[ "$(api /v1/plugin/csi/hostpath 'j.ControllersHealthy >= 1 && j.NodesHealthy >= 1')" == true ]]; }

# --- job and volume files of our own ------------------------------------------

J="$WORK/jobs"

# A service job: one raw_exec task that prints a line and sleeps. v2 changes
# the task's command line, so the update is a canary deployment to promote.
sleeper_job() {
  cat <<EOF
job "sleeper" {
  datacenters = ["dc1"]
  type        = "service"

  meta {
    version = "$1"
  }

  update {
    max_parallel     = 1
    canary           = 1
    min_healthy_time = "1s"
    healthy_deadline = "1m"
    auto_promote     = false
  }

  group "sleeper" {
    count = 1

    task "sleep" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello from berth $1 \$NOMAD_ALLOC_ID; echo to stderr >&2; while true; do sleep 1; done"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
EOF
}
sleeper_job v1 >"$J/sleeper.hcl"
sleeper_job v2 >"$J/sleeper-v2.hcl"

# The hostpath CSI plugin Berth ships (examples/hostpath-plugin.hcl, less
# Berth's csi_plugin.health_timeout, which Nomad's parser does not know).
cat >"$J/hostpath-plugin.hcl" <<'EOF'
job "hostpath-plugin" {
  datacenters = ["dc1"]
  type        = "system"

  group "plugin" {
    task "plugin" {
      driver = "raw_exec"

      config {
        command = "berth"
        args = [
          "plugin",
          "hostpath",
          "--endpoint=${CSI_ENDPOINT}",
          "--node-id=${node.unique.id}",
          "--data-dir=/var/lib/berth/hostpath/${node.unique.id}",
        ]
      }

      csi_plugin {
        id   = "hostpath"
        type = "monolith"
      }

      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}
EOF

cat >"$J/volume.hcl" <<'EOF'
id        = "check-vol"
name      = "check-vol"
type      = "csi"
plugin_id = "hostpath"

capacity_min = "10MiB"
capacity_max = "1GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
EOF

# A batch job that claims the volume, writes into it and exits.
cat >"$J/writer.hcl" <<'EOF'
job "writer" {
  datacenters = ["dc1"]
  type        = "batch"

  group "writer" {
    volume "data" {
      type            = "csi"
      source          = "check-vol"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    restart {
      attempts = 0
      mode     = "fail"
    }

    task "write" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "date > \"$NOMAD_TASK_DIR/data/check.txt\""]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
EOF

# --- cluster -------------------------------------------------------------------

# The Leader column is true when the region's leader (/v1/status/leader) is the member's Addr:Tags.port.
check server members --expect 'alive +true'
check agent-info --expect 'leader'
check node status --expect 'ready'
NODE_ID="$(api /v1/nodes 'j[0]?.ID')"
AGENT_NODE_ID="$(api /v1/nodes 'j[0]?.ID ?? j[0]?.id')"
if [[ -n "$NODE_ID" ]]; then
  check node status "$NODE_ID" --expect "Status += ready"
else
  not_run "node status <node>" "GET /v1/nodes gave no node ID"
fi
check operator raft list-peers --expect 'leader|true'
check operator autopilot get-config --expect 'CleanupDeadServers'
if has_command "operator scheduler get-config" "added in Nomad 1.4; 1.1.2's CLI has no command for /v1/operator/scheduler/configuration"; then
  check operator scheduler get-config --expect 'Scheduler Algorithm'
fi

# --- namespaces ------------------------------------------------------------------

check namespace apply -description "made by nomad-cli-check" nscheck --expect 'Successfully applied namespace "nscheck"'
check namespace list --expect 'nscheck +made by nomad-cli-check'
check namespace status nscheck --expect 'Description = made by nomad-cli-check'
check namespace delete nscheck --expect 'Successfully deleted namespace "nscheck"'

# --- a service job, its allocation, its deployment ------------------------------

EVAL_ID=""
SLEEPER_RAN=""
if check job run "$J/sleeper.hcl" --expect 'finished with status "complete"'; then
  EVAL_ID="$(sed -nE 's/.*[Mm]onitoring evaluation "([0-9a-f-]+)".*/\1/p' "$LAST_OUT" | head -n 1)"
fi
# Its allocations are waited for even when the CLI failed on the answer,
# as long as the job got in.
[[ -n "$(api /v1/job/sleeper 'j.ID')" ]] && SLEEPER_RAN=1
check job status --expect 'sleeper'
check job status sleeper --expect 'sleeper'
check job inspect sleeper --expect '"ID": "sleeper"'
[[ -n "$EVAL_ID" ]] || EVAL_ID="$(api /v1/job/sleeper/evaluations 'j[0]?.ID')"
if [[ -n "$EVAL_ID" ]]; then
  check eval status "$EVAL_ID" --expect 'complete'
else
  not_run "eval status <eval>" "no evaluation ID from job run or GET /v1/job/sleeper/evaluations"
fi

ALLOC_ID=""
[[ -n "$SLEEPER_RAN" ]] && wait_for 60 has_alloc sleeper running && ALLOC_ID="$(newest_alloc sleeper running)"
# Nomad's HTTPAddr is host:port; the CLI puts http:// in front itself.
NODE_HTTP="$( [[ -n "$NODE_ID" ]] && api "/v1/node/$NODE_ID" 'j.HTTPAddr')"
if [[ -z "$ALLOC_ID" ]]; then
  for c in "alloc status" "alloc logs" "alloc logs -stderr" "alloc fs" "alloc fs <file>" "alloc exec"; do
    not_run "$c <alloc>" "no running allocation of sleeper in GET /v1/job/sleeper/allocations"
  done
else
  check alloc status "$ALLOC_ID" --expect 'running'
  # logs, fs and exec dial the node's HTTPAddr (GET /v1/node/:id) when it
  # has one: it must be on loopback too.
  if [[ -n "$NODE_HTTP" && ! "$NODE_HTTP" =~ ^(https?://)?(127\.[0-9.]+|localhost|\[::1\]):[0-9]+$ ]]; then
    for c in "alloc logs" "alloc logs -stderr" "alloc fs" "alloc fs <file>" "alloc exec"; do
      not_run "$c <alloc>" "the node's HTTPAddr $NODE_HTTP is not on loopback"
    done
  else
    check alloc logs "$ALLOC_ID" sleep --expect 'hello from berth'
    check alloc logs -stderr "$ALLOC_ID" sleep --expect 'to stderr'
    check alloc fs "$ALLOC_ID" alloc/logs --expect 'sleep\.stdout\.0'
    check alloc fs "$ALLOC_ID" alloc/logs/sleep.stdout.0 --expect 'hello from berth'
    check alloc exec -i=false -t=false -task sleep "$ALLOC_ID" /bin/echo exec-ok --expect '^exec-ok'
  fi
fi

# job plan exits 1 when the plan would place or stop allocations.
check job plan "$J/sleeper-v2.hcl" --codes "0 1" --expect 'Job: "sleeper"'
# A canary update waits for a manual promotion: Nomad's own `job run` monitors
# its deployment until the progress deadline (1.1.2's monitor ends only on
# successful, failed or cancelled), so a script runs it with -detach, as here.
check job run -detach "$J/sleeper-v2.hcl" --expect 'Evaluation ID'
check job history sleeper --expect 'Version +=? *1'
check deployment list --expect 'sleeper'
DEPLOY_ID="$(api /v1/job/sleeper/deployment 'j.ID')"
if [[ -z "$DEPLOY_ID" ]]; then
  not_run "deployment status <deployment>" "GET /v1/job/sleeper/deployment gave no deployment"
  not_run "deployment promote <deployment>" "GET /v1/job/sleeper/deployment gave no deployment"
else
  check deployment status "$DEPLOY_ID" --expect 'sleeper'
  if wait_for 60 canary_healthy "$DEPLOY_ID"; then
    check deployment promote "$DEPLOY_ID" --expect 'complete|successful|[Pp]romot'
  else
    not_run "deployment promote $DEPLOY_ID" "its canary was not healthy within 60s (GET /v1/deployment/:id TaskGroups.*.HealthyAllocs)"
  fi
fi
check job stop sleeper --expect 'finished with status "complete"|[Mm]onitoring evaluation'

# --- CSI: the hostpath plugin and a volume -------------------------------------

check job run "$J/hostpath-plugin.hcl" --expect 'finished with status "complete"'
if [[ -n "$(api /v1/job/hostpath-plugin 'j.ID')" ]] && ! wait_for 60 plugin_healthy; then
  echo "  (the hostpath plugin was not healthy within 60s by GET /v1/plugin/csi/hostpath)"
fi
check plugin status --expect 'hostpath'
check plugin status hostpath --expect 'hostpath'
check volume create "$J/volume.hcl" --expect 'check-vol'
check volume status --expect 'check-vol'
check volume status check-vol --expect 'check-vol'
EXTERNAL_ID="$(api /v1/volume/csi/check-vol 'j.ExternalID')"

check job run "$J/writer.hcl" --expect 'finished with status "complete"'
if [[ -n "$(api /v1/job/writer 'j.ID')" ]] && ! wait_for 60 has_alloc writer complete; then
  echo "  (the writer job did not complete within 60s)"
fi
if [[ -n "$NODE_ID" ]]; then
  check volume detach check-vol "$NODE_ID"
else
  not_run "volume detach check-vol <node>" "no node ID"
fi
check job stop -purge writer
check volume deregister check-vol
if [[ -n "$EXTERNAL_ID" ]]; then
  # The same volume again, by the ID the plugin gave it at creation.
  cat >"$J/volume-register.hcl" <<EOF
id          = "check-vol"
name        = "check-vol"
type        = "csi"
plugin_id   = "hostpath"
external_id = "$EXTERNAL_ID"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
EOF
  check volume register "$J/volume-register.hcl"
  check volume status check-vol --expect "$EXTERNAL_ID"
else
  not_run "volume register volume-register.hcl" "GET /v1/volume/csi/check-vol gave no ExternalID"
fi
check volume delete check-vol
if has_command "service list" "added in Nomad 1.3 (Nomad's native service discovery)"; then
  check service list
fi
check job stop hostpath-plugin --expect 'finished with status "complete"|[Mm]onitoring evaluation'

echo
echo "Summary: $OK ok, $FAILED failed, $SKIPPED skipped in ${SECONDS}s ($NOMAD_VERSION against Berth $(git -C "$REPO" log -1 --format=%h 2>/dev/null))"
if [[ $FAILED -gt 0 ]]; then exit 1; fi
exit 0
