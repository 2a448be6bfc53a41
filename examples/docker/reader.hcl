# A docker task that reads back what examples/docker/writer.hcl wrote (the
# volume read-only at /data) and prints it: `berth alloc logs <alloc> read`.
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
      driver = "docker"

      config {
        image   = "busybox:1.35"
        command = "cat"
        args    = ["/data/hello.txt"]
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
