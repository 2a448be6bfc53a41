# `user`: both built-in drivers run the task as the named user (here
# nobody), with the task's own directories handed to it. Each task writes
# its uid into its local directory, from its working directory (the task
# directory, as in Nomad).
job "as-nobody" {
  type = "batch"

  group "g" {
    task "raw" {
      driver = "raw_exec"
      user   = "nobody"
      config {
        command = "/bin/sh"
        args    = ["-c", "id -u > local/uid.txt"]
      }
    }

    task "jailed" {
      driver = "exec"
      user   = "nobody"
      config {
        command = "/bin/sh"
        args    = ["-c", "id -u > local/uid.txt"]
      }
    }
  }
}
