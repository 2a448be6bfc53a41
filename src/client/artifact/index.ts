// Artifacts: files a task's `artifact` blocks bring into its directory: from
// the node's filesystem (paths and file:// URLs), http(s) downloads and git
// repositories, as go-getter fetches them (archives unpacked, checksums checked).
export { ArtifactHook, type ArtifactHookOptions } from './artifact-hook.js';
export { ArtifactError, type ArtifactErrorCode } from './artifact-error.js';
export { archiveKind, readArtifactSource, type ArchiveKind, type ArtifactSource, type Checksum } from './artifact-source.js';
export { fetchArtifact, verifyChecksum, type PlaceOptions } from './fetch-artifact.js';
export { fetchRemote, type RemoteFetchOptions } from './fetch-remote.js';
