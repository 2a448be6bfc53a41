// Job and volume files (HCL or JSON) -> checked canonical specs, with
// file:line:col errors. Used by the CLI and the agent.
export {
  parseJobFile,
  parseVolumeFile,
  parseSpecText,
  type SpecProblem,
  type HclBody,
  fileFormat,
  formatFileProblem,
  SpecFileError,
  type FileProblem,
  type FileFormat,
  type JobFile,
  type VolumeFile,
} from './spec-file.js';
