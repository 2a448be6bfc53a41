# kill_signal, kill_timeout and shutdown_delay: stopping the job waits the
# shutdown delay, then sends SIGINT (not SIGTERM), which the task traps and
# records before it exits.
job "signals" {
  group "g" {
    task "trap" {
      driver         = "raw_exec"
      kill_signal    = "SIGINT"
      kill_timeout   = "30s"
      shutdown_delay = "1s"
      config {
        command = "/bin/bash"
        args = [
          "-c",
          "trap 'echo INT > ${NOMAD_ALLOC_DIR}/signal.txt; exit 0' INT; trap 'echo TERM > ${NOMAD_ALLOC_DIR}/signal.txt; exit 0' TERM; echo ready > ${NOMAD_ALLOC_DIR}/ready.txt; while :; do sleep 0.2; done",
        ]
      }
    }
  }
}
