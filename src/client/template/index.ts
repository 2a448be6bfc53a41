// Templates: Go's text/template language as consul-template renders it, and
// the task hook that renders a task's `template` blocks before it starts and
// again when their source changes. The language itself loads at first use
// (loadTemplateEngine): an agent whose tasks have no templates never evaluates it.
export { loadTemplateEngine, type TemplateEngine } from './template-hook.js';
export type { GoTemplate, GoTemplateOptions } from './go-template.js';
export type { FunctionEnv } from './_consul-funcs.js';
export { TemplateError, TemplateSyntaxError, TemplateExecError, type TemplateErrorCode } from './_errors.js';
export { TemplateHook, type TemplateHookOptions } from './template-hook.js';
export { ServiceCatalog, type ServiceCatalogOptions } from './service-catalog.js';
export { parseServiceQuery, type ServiceInstance, type ServiceLookup } from './_nomad-funcs.js';
