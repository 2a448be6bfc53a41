# Berth's hostpath CSI plugin in a container: the same plugin as
# examples/hostpath-plugin.hcl, run by the docker driver as Nomad runs CSI
# plugins (privileged, so that its bind mounts reach the host). The agent
# binds the plugin's mount dir at `mount_dir` ("/csi", Nomad's default) with
# bidirectional propagation and the host's /dev, and gives the task
# CSI_ENDPOINT=unix:///csi/csi.sock as seen inside the container.
#
# The image is Berth's build on node in a minimal root filesystem
# (`node scripts/docker-rig.mjs plugin-image DIR` builds it, tagged
# berth/hostpath-plugin:dev); its entrypoint is `berth plugin hostpath`.
# Volumes live on the host under /var/lib/berth/hostpath/<node ID>.
# Needs `allow_privileged = true` and `volumes { enabled = true }` in the
# agent's plugin "docker" config (scripts/demo-docker.sh writes one).
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
      driver = "docker"

      config {
        image      = "berth/hostpath-plugin:dev"
        privileged = true
        args = [
          "--endpoint=${CSI_ENDPOINT}",
          "--node-id=${node.unique.id}",
          "--data-dir=/var/lib/berth/hostpath/${node.unique.id}",
        ]
        volumes = ["/var/lib/berth/hostpath:/var/lib/berth/hostpath"]
      }

      csi_plugin {
        id             = "hostpath"
        type           = "monolith"
        mount_dir      = "/csi"
        health_timeout = "30s"
      }

      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}
