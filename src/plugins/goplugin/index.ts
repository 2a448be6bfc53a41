// goplugin: hashicorp/go-plugin's process protocol, host side and serve side.
export { GoPluginError, type GoPluginErrorCode } from './errors.js';
