# max_run_duration: the task would sleep for ten minutes; it is killed after
# two seconds, fails and is not restarted.
job "overrun" {
  type = "batch"
  group "g" {
    task "sleepy" {
      driver           = "raw_exec"
      max_run_duration = "2s"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
    }
  }
}
