# A batch job that reads back what writer.hcl left in the volume, read-only.
#   berth job run examples/reader.hcl
job "reader" {
  type = "batch"

  group "reader" {
    volume "data" {
      type            = "csi"
      source          = "shared-data"
      access_mode     = "single-node-reader-only"
      attachment_mode = "file-system"
      read_only       = true
    }

    restart {
      attempts = 0
      mode     = "fail"
    }

    task "read" {
      driver = "raw_exec"

      config {
        # raw_exec has no chroot: the volume is bound at <task dir>/<destination>.
        command = "/bin/sh"
        args    = ["-c", "cat \"$BERTH_TASK_DIR/data/hello.txt\""]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
        read_only   = true
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
