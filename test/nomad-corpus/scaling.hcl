# A group's scaling block: stored with the job, listed by `scaling policy
# list`, and `job scale` keeps the count within min and max (min left out:
# the count at registration, as Nomad's).
job "scaled" {
  group "web" {
    count = 2
    scaling {
      max = 4
      policy {
        cooldown = "1m"
      }
    }
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
