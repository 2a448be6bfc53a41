# A docker task that writes a file into the shared-data volume and exits.
# The volume is mounted at /data inside the container.
#   berth job run examples/docker/writer.hcl
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
      driver = "docker"

      config {
        image   = "busybox:1.35"
        command = "sh"
        args    = ["-c", "date > /data/hello.txt && echo \"written by $NOMAD_ALLOC_ID\" >> /data/hello.txt"]
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
