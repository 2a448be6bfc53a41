// The template language itself (Go's text/template as consul-template renders
// it, and the env file reader of `env = true`), reached only through
// loadTemplateEngine(): an agent loads it at its first template, not at its
// start (its module evaluation was ~12 ms of a dev agent's start, issue 40).
export { GoTemplate, supportedFunctions, type GoTemplateOptions } from './go-template.js';
export { parseEnvFile } from './_env-file.js';
