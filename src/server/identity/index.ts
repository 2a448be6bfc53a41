// Workload identity (Nomad 1.7+): the keyring that keeps the servers' signing
// key in the state store, the claims of a task's JWT, and the service that
// signs a node's identities and serves the JWKS and OIDC discovery documents.
export { workloadClaims, type WorkloadClaims, type ClaimsInput } from './claims.js';
export { Keyring, makeRsaKey, type KeyMaker, type KeyringOptions, type PublicJwk } from './keyring.js';
export { WorkloadIdentities, REJECTED, type OidcDiscovery, type WorkloadIdentitiesOptions } from './workload-identities.js';
