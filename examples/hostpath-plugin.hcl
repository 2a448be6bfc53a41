# The hostpath CSI plugin that ships with Berth, as a system job: one
# allocation on every node, serving both the controller and the node service
# (a "monolith"). Volumes are directories under /var/lib/berth/hostpath.
#
# The agent gives the task CSI_ENDPOINT (unix:///.../csi.sock, a socket in the
# allocation's own plugin directory) and waits for the plugin to answer Probe
# before it registers it. The task runs through `sh -c` so that the node ID
# and the endpoint come from the environment (Berth does not interpolate job
# files; `$${` is HCL's escape for a literal `${`). The plugin's node ID is
# BERTH_NODE_ID when the agent sets it, else the host name; volumes live in a
# directory per node ID, so several nodes on one machine do not collide.
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
        command = "/bin/sh"
        args = [
          "-c",
          "id=\"$${BERTH_NODE_ID:-$(hostname)}\"; exec berth plugin hostpath --endpoint \"$CSI_ENDPOINT\" --node-id \"$id\" --data-dir \"/var/lib/berth/hostpath/$id\"",
        ]
      }

      csi_plugin {
        id             = "hostpath"
        type           = "monolith"
        mount_dir      = "/csi"
        health_timeout = "30s"
      }

      resources {
        cpu    = 100
        memory = 256 # node + the plugin: ~130 MB resident; the limit is enforced
      }
    }
  }
}
