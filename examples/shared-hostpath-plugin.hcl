# The hostpath CSI plugin on several nodes sharing one data dir (storage every
# node reaches: an NFS export, or one directory when the nodes run on one
# machine), so that a single-node-writer volume can move between nodes: a
# writer stopped on one node (or drained away) starts on another with the
# same data. Volumes are created through any node's controller and found by
# every other at once (the instances share the state file safely: a lock
# around each write, and every call reads what the others wrote).
#
#   berth job run examples/shared-hostpath-plugin.hcl
#   berth volume create examples/volume.hcl
#
# Every instance reports the same plugin node ID ("shared"), so the volume is
# reachable from every node and ControllerPublish/Unpublish moves it; each
# node keeps its own records of what it staged and published in its own
# --node-state-dir (never shared). Use this job instead of
# examples/hostpath-plugin.hcl, not beside it (both register plugin "hostpath").
job "hostpath-plugin" {
  type = "system"

  group "plugin" {
    restart {
      attempts = 5
      interval = "5m"
      delay    = "2s"
      mode     = "delay"
    }

    task "plugin" {
      driver = "raw_exec"

      config {
        command = "berth"
        args = [
          "plugin",
          "hostpath",
          "--endpoint=${CSI_ENDPOINT}",
          "--node-id=shared",
          "--data-dir=/srv/berth-shared/hostpath",
          "--node-state-dir=/var/lib/berth/hostpath-node/${node.unique.id}",
        ]
      }

      csi_plugin {
        id             = "hostpath"
        type           = "monolith"
        health_timeout = "30s"
      }

      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}
