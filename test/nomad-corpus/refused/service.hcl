# expect: 9:7 groups[0].network.ports: Berth does not support `port` yet: port allocation comes with the networking work; remove it to run this job on Berth today
# expect: 29:3 constraints: Berth does not support `constraint` yet: placement constraints come with the cluster operations work; remove it to run this job on Berth today
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
