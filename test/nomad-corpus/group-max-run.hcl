# A group's max_run_duration (batch jobs): the allocation is stopped two
# seconds after it was created and completes, as Nomad's does; its poststop
# task, which had not started, is skipped.
job "capped" {
  type = "batch"
  group "g" {
    max_run_duration = "2s"
    task "work" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
    }
    task "after" {
      driver = "raw_exec"
      lifecycle {
        hook = "poststop"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo ran > ${NOMAD_ALLOC_DIR}/after.txt"]
      }
    }
  }
}
