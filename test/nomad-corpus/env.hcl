# The task environment and run-time interpolation, as a Nomad user writes a
# job: a raw_exec task dumps what it sees into its allocation directory.
# Expected: NOMAD_* and BERTH_* set; meta merged job < group < task as
# NOMAD_META_<key> and its upper-cased twin; `env` values and `args`
# interpolated by the client; an unknown `${...}` left as written, with a
# task event naming it.
job "envdump" {
  type = "batch"

  meta {
    team = "storage"
    tier = "job"
  }

  group "g" {
    meta {
      tier = "group"
    }

    task "dump" {
      driver = "raw_exec"

      meta {
        build = "b42"
      }

      env {
        DATA_DIR = "${NOMAD_ALLOC_DIR}/data"
        WHERE    = "${node.unique.name}@${node.datacenter}"
      }

      config {
        command = "/bin/sh"
        args = [
          "-c",
          "env | sort > \"$NOMAD_ALLOC_DIR/env.txt\"; printf '%s\\n' \"$@\" > \"$NOMAD_ALLOC_DIR/args.txt\"",
          "sh",
          "${NOMAD_JOB_ID}",
          "${node.unique.id}",
          "${attr.kernel.name}",
          "${meta.rack}",
          "${node.class}",
          "${env["NOMAD_TASK_NAME"]}",
          "${NOMAD_PORT_http}",
        ]
      }

      resources {
        cpu    = 120
        memory = 64
      }
    }
  }
}
