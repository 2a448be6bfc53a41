// Artifacts: files a task's `artifact` blocks bring into its directory: from
// the node's filesystem (paths and file:// URLs), http(s) downloads and git
// repositories, as go-getter fetches them (archives and compressed files
// unpacked, checksums and checksum files checked, within the client's limits).
export { ArtifactHook, type ArtifactHookOptions } from './artifact-hook.js';
export { ArtifactError, type ArtifactErrorCode } from './artifact-error.js';
export { DEFAULT_ARTIFACT_LIMITS, parseBytes, type ArtifactLimits } from './artifact-limits.js';
export { archiveKind, parseDigest, readArtifactSource, type ArchiveKind, type ArtifactSource, type Checksum, type Digest } from './artifact-source.js';
export { digestFor, resolveChecksum, type ChecksumFetchOptions } from './checksum-file.js';
export { fetchArtifact, verifyChecksum, type PlaceOptions } from './fetch-artifact.js';
export { fetchRemote, gitEnv, type RemoteFetchOptions } from './fetch-remote.js';
