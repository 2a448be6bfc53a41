# The hostpath CSI plugin written the way Nomad's demos write a plugin job:
# the endpoint and the node ID come from run-time interpolation in `args`,
# and csi_plugin takes Nomad's default mount_dir ("/csi"). Expected: the
# plugin becomes healthy. DATA_ROOT is replaced by the test.
job "hostpath-nomad-style" {
  type = "system"

  group "plugin" {
    task "plugin" {
      driver = "raw_exec"

      config {
        command = "berth"
        args = [
          "plugin",
          "hostpath",
          "--endpoint=${CSI_ENDPOINT}",
          "--node-id=${node.unique.id}",
          "--data-dir=DATA_ROOT/${node.unique.id}",
          "--log-level=warn",
        ]
      }

      csi_plugin {
        id   = "hostpath-ns"
        type = "monolith"
      }
    }
  }
}
