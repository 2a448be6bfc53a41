# `user`: both built-in drivers run the task as the named user (here
# nobody), with the task's own directories handed to it. Each task writes
# its uid into its local directory.
job "as-nobody" {
  type = "batch"

  group "g" {
    task "raw" {
      driver = "raw_exec"
      user   = "nobody"
      config {
        command = "/bin/sh"
        args    = ["-c", "cd \"$NOMAD_TASK_DIR\" 2>/dev/null; id -u > uid.txt"]
      }
    }

    task "jailed" {
      driver = "exec"
      user   = "nobody"
      config {
        command = "/bin/sh"
        args    = ["-c", "cd \"$NOMAD_TASK_DIR\" && id -u > uid.txt"]
      }
    }
  }
}
