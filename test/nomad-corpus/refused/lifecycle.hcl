# expect: 7:9 groups[0].tasks[0].lifecycle.hook: must be one of "prestart", "poststart", "poststop"
# expect: 17:7 groups[0].ephemeralDisk.sticky: Berth does not support ephemeral_disk.sticky yet: a replacement allocation starts with an empty directory
job "lc" {
  group "g" {
    task "a" {
      lifecycle {
        hook = "prerun"
      }
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
    task "main" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
    ephemeral_disk {
      sticky = true
    }
  }
}
