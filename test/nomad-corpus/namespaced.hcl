# A job in its own namespace: refused until the namespace exists (Nomad:
# `job "ticker" is in nonexistent namespace "ops"`), then it runs, is listed
# only under `-namespace ops` (and `*`), and the namespace cannot be deleted
# while it runs.
job "ticker" {
  namespace   = "ops"
  datacenters = ["dc1"]

  group "g" {
    task "tick" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo $NOMAD_NAMESPACE > $NOMAD_ALLOC_DIR/ns.txt; while :; do sleep 1; done"]
      }
    }
  }
}
