// Namespaces (Nomad's, open source since 1.0): the `namespaces` table's rows,
// created, changed and deleted by the namespace service, read by the routes,
// and the check every registration runs in its own write so that nothing
// lands in a namespace that does not exist (or is being deleted).
export { NamespaceService, type NamespaceServiceOptions, type NamespaceInput } from './namespace-service.js';
export { namespaceIn, namespacesIn, namespaceExists, requireNamespace } from './namespace-reads.js';
export { NamespaceError, type NamespaceErrorCode } from './errors.js';
