// What the host volume manager asks of a plugin (Nomad's HostVolumePlugin):
// the built-in `mkdir` and external executables implement it.

/** What `create` and `delete` are told about the volume (Nomad's ClientHostVolumeCreateRequest). */
export interface HostVolumeRequest {
  id: string;
  name: string;
  namespace: string;
  nodeId: string;
  nodePool: string;
  capacityMinBytes: number;
  capacityMaxBytes: number;
  parameters: Record<string, string>;
}

/** A plugin's answer to `create`: the path it made and its size (0: unrestricted). */
export interface HostVolumeCreated {
  path: string;
  bytes: number;
}

export interface HostVolumePlugin {
  readonly id: string;
  /** The plugin's version (Nomad's fingerprint answer). Rejects when the plugin cannot answer. */
  fingerprint(opts?: { signal?: AbortSignal }): Promise<string>;
  /** Makes the volume; safe to repeat (a volume already made is answered again). Rejects with HostVolumeError. */
  create(req: HostVolumeRequest, opts?: { signal?: AbortSignal }): Promise<HostVolumeCreated>;
  /** Deletes what `create` made at `createdPath`; safe to repeat. Rejects with HostVolumeError. */
  delete(req: HostVolumeRequest & { createdPath: string }, opts?: { signal?: AbortSignal }): Promise<void>;
}
