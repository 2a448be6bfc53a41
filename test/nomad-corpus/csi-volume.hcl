id        = "nsdata"
name      = "nsdata"
type      = "csi"
plugin_id = "hostpath-ns"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
