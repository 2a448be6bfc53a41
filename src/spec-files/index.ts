// Job and volume files (HCL or JSON) -> checked canonical specs, with
// file:line:col errors (Nomad's jobspec). Used by the CLI and the agent; it
// sits above structs, whose schemas it applies.
export {
  parseJobFile,
  parseVolumeFile,
  parseHostVolumeFile,
  volumeFileType,
  type HostVolumeFile,
  parseSpecText,
  type SpecProblem,
  type HclBody,
  fileFormat,
  formatFileProblem,
  SpecFileError,
  type FileProblem,
  type FileFormat,
  type JobFile,
  type JobFileOptions,
  type VolumeFile,
} from './spec-file.js';
