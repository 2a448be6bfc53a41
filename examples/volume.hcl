# A volume created through the hostpath plugin's controller:
#   berth volume create examples/volume.hcl
id        = "shared-data"
name      = "shared-data"
type      = "csi"
plugin_id = "hostpath"

capacity_min = "10MiB"
capacity_max = "1GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}

# Sent to the plugin on create, publish and delete; never shown by any read.
secrets {
  example_token = "change-me"
}

parameters {
  tier = "local"
}
