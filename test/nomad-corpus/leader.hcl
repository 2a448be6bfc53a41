# leader: the leader task ends after a second; its follower, which would
# sleep for ten minutes, is stopped with "Leader Task Dead" and the batch
# allocation completes (the follower was stopped, it did not fail).
job "leader" {
  type = "batch"
  group "g" {
    task "leader" {
      driver = "raw_exec"
      leader = true
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 1; echo led > ${NOMAD_ALLOC_DIR}/leader.txt"]
      }
    }
    task "follower" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
    }
  }
}
