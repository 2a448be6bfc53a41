job "web" {
  datacenters = ["dc1"]

  group "web" {
    network {
      port "http" {
      }
    }
    service {
      name = "web"
      port = "http"
      check {
        type     = "http"
        path     = "/"
        interval = "10s"
        timeout  = "2s"
      }
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
}
