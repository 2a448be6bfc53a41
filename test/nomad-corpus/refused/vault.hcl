# expect: 9:7 groups[0].tasks[0].vault: Berth does not support `vault`: Berth has no Vault integration; pass secrets through the task's env or files under its secrets dir
job "secrets" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      vault {
        policies = ["app"]
      }
    }
  }
}
