# A volume mounted where an interpolated destination says: inside the
# allocation directory. Expected: the task finds the volume there and writes
# through it into the volume.
job "ns-consumer" {
  type = "batch"

  group "g" {
    volume "data" {
      type            = "csi"
      source          = "nsdata"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "write" {
      driver = "raw_exec"

      volume_mount {
        volume      = "data"
        destination = "${NOMAD_ALLOC_DIR}/data"
      }

      config {
        command = "/bin/sh"
        args    = ["-c", "mountpoint -q ${NOMAD_ALLOC_DIR}/data && echo hello-from-${NOMAD_SHORT_ALLOC_ID} > ${NOMAD_ALLOC_DIR}/data/hello.txt"]
      }
    }
  }
}
