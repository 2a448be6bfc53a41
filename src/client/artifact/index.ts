// Artifacts: files a task's `artifact` blocks bring into its directory from
// the node's filesystem (paths and file:// URLs; archives unpacked).
export { ArtifactHook, type ArtifactHookOptions } from './artifact-hook.js';
export { ArtifactError, fetchArtifact, localArtifactPath, archiveKind, type ArtifactErrorCode } from './fetch-artifact.js';
