# expect: 5:3 consul: Berth does not support `consul`: Berth has no Consul integration
# expect: 9:5 groups[0].scaling: Berth does not support `scaling`: Berth has no autoscaler; set the group count
# expect: 18:7 groups[0].tasks[0].killSignal: must be a signal name such as "SIGTERM", "SIGINT" or "SIGUSR1"
job "api" {
  consul {
    namespace = "x"
  }
  group "api" {
    scaling {
      min = 1
      max = 3
    }
    task "api" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      kill_signal = "SIGNOPE"
    }
  }
}
