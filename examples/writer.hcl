# A batch job that writes a file into the shared-data volume and exits.
#   berth job run examples/writer.hcl
job "writer" {
  type = "batch"

  group "writer" {
    volume "data" {
      type            = "csi"
      source          = "shared-data"
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
        # raw_exec has no chroot: the volume is bound at <task dir>/<destination>.
        args    = ["-c", "cd \"$BERTH_TASK_DIR/data\" && date > hello.txt && echo \"written by $BERTH_ALLOC_ID\" >> hello.txt"]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
