# expect: 8:9 groups[0].tasks[0].lifecycle.sidecar: sidecar applies to prestart and poststart tasks only
# expect: 5:5 groups[0].tasks: group "g" needs at least one main task (a task without a lifecycle block)
job "sc" {
  group "g" {
    task "cleanup" {
      lifecycle {
        hook    = "poststop"
        sidecar = true
      }
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
