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
/** The tables of the job and volume files' blocks and attributes (scripts/gen-reference.ts documents them). */
export { JOB_BODY, VOLUME_BODY, type Body as SpecBody, type Field as SpecField } from './_hcl-convert.js';
