# A job's ui block (Nomad 1.8): a description and links, stored with the job,
# shown by `job status` and the web UI; changing it changes nothing that runs.
job "described" {
  ui {
    description = "The team's **web** front end.\nSecond line."
    link {
      label = "Runbook"
      url   = "https://runbooks.example.com/web"
    }
    link {
      label = "Dashboard"
      url   = "https://grafana.example.com/d/web"
    }
  }
  group "web" {
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
