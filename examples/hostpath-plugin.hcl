# The hostpath CSI plugin that ships with Berth, as a system job: one
# allocation on every node, serving both the controller and the node service
# (a "monolith"). Volumes are directories under /var/lib/berth/hostpath.
#
# The agent gives the task CSI_ENDPOINT (unix:///.../csi.sock, a socket in the
# allocation's own plugin directory; `mount_dir` is Nomad's default "/csi") and
# waits for the plugin to answer Probe before it registers it. As in Nomad's
# plugin jobs, `${CSI_ENDPOINT}` and `${node.unique.id}` in the args are
# filled in by the agent when the task starts. The node ID is the plugin's
# node ID, and volumes live in a directory per node ID, so several nodes on
# one machine do not collide.
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
          "--node-id=${node.unique.id}",
          "--data-dir=/var/lib/berth/hostpath/${node.unique.id}",
        ]
      }

      csi_plugin {
        id             = "hostpath"
        type           = "monolith"
        health_timeout = "30s"
      }

      resources {
        cpu    = 100
        memory = 256 # node + the plugin: ~130 MB resident; the limit is enforced
      }
    }
  }
}
