# expect: 6:3 consul: Berth does not support `consul`: Berth has no Consul integration
# expect: 10:5 groups[0].count: task group count (5) must not be greater than the scaling policy's max (3)
# expect: 20:7 groups[0].tasks[0].killSignal: must be a signal name such as "SIGTERM", "SIGINT" or "SIGUSR1"
# A group's scaling block is Nomad's (job scale keeps the count within it); a count outside it is refused.
job "api" {
  consul {
    namespace = "x"
  }
  group "api" {
    count = 5
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
