import { inspect } from 'node:util';
import { REDACTED } from '../lib/index.js';
import { CsiRequestError } from './errors.js';

/** ValidateVolumeCapabilities answer, in Berth's types (here, beside checkValidation, so types.ts and this file do not import each other). */
export interface ValidationAnswer {
  /** Unset means the plugin did not validate the request (not the same as "invalid"). */
  confirmed?: {
    volumeContext: Record<string, string>;
    volumeCapabilities: VolumeCapability[];
    parameters: Record<string, string>;
    mutableParameters: Record<string, string>;
  };
  message: string;
}

/** VolumeCapability.AccessMode.Mode in Berth's (and Nomad's) words. */
export const ACCESS_MODES = [
  'single-node-writer',
  'single-node-reader-only',
  'multi-node-reader-only',
  'multi-node-single-writer',
  'multi-node-multi-writer',
  'single-node-single-writer',
  'single-node-multi-writer',
] as const;
export type AccessMode = (typeof ACCESS_MODES)[number];

/** Whether the volume is handed over as a raw block device or a mounted filesystem. */
export const ATTACHMENT_MODES = ['block-device', 'file-system'] as const;
export type AttachmentMode = (typeof ATTACHMENT_MODES)[number];

/** Access modes a plugin may be sent only if it advertises SINGLE_NODE_MULTI_WRITER. */
export const SINGLE_NODE_MULTI_WRITER_MODES: readonly AccessMode[] = ['single-node-single-writer', 'single-node-multi-writer'];

/** True for modes that never allow a write. */
export function isReadOnlyMode(mode: AccessMode): boolean {
  return mode === 'single-node-reader-only' || mode === 'multi-node-reader-only';
}

export interface MountOptions {
  fsType?: string;
  mountFlags?: readonly string[];
  volumeMountGroup?: string;
}

/**
 * One way a workload wants to use a volume: an access mode plus either a
 * block device or a filesystem mount. Immutable, compared by value with
 * `equals`. Mount flags may carry credentials (`password=...`), so every
 * printed form (`String`, `util.inspect`, `JSON.stringify`, pino) shows them as
 * [REDACTED]; `revealMountFlags()` is the one way to the values.
 */
export class VolumeCapability {
  readonly accessMode: AccessMode;
  readonly attachment: AttachmentMode;
  /** Empty for block, or when the plugin should pick. */
  readonly fsType: string;
  readonly volumeMountGroup: string;
  /**
   * How many mount flags there are. A public field because the printed forms
   * must work from public fields alone: pino's redaction clones logged
   * objects with their prototype but without private fields.
   */
  readonly mountFlagCount: number;
  readonly #mountFlags: readonly string[];

  private constructor(accessMode: AccessMode, attachment: AttachmentMode, mount: MountOptions) {
    this.accessMode = accessMode;
    this.attachment = attachment;
    this.fsType = mount.fsType ?? '';
    this.volumeMountGroup = mount.volumeMountGroup ?? '';
    this.#mountFlags = Object.freeze([...(mount.mountFlags ?? [])]);
    this.mountFlagCount = this.#mountFlags.length;
    Object.freeze(this);
  }

  /** A raw block device capability. */
  static block(accessMode: AccessMode): VolumeCapability {
    return new VolumeCapability(accessMode, 'block-device', {});
  }

  /** A mounted filesystem capability. */
  static mount(accessMode: AccessMode, mount: MountOptions = {}): VolumeCapability {
    return new VolumeCapability(accessMode, 'file-system', mount);
  }

  get isBlock(): boolean {
    return this.attachment === 'block-device';
  }

  /** The mount flags in clear text, for the wire and the mount call. Never log them. */
  revealMountFlags(): readonly string[] {
    return this.#mountFlags;
  }

  /** Value equality: same mode, same access type, same fs type, flags (in order) and group. */
  equals(other: VolumeCapability): boolean {
    return (
      this.accessMode === other.accessMode &&
      this.attachment === other.attachment &&
      this.fsType === other.fsType &&
      this.volumeMountGroup === other.volumeMountGroup &&
      this.#mountFlags.length === other.#mountFlags.length &&
      this.#mountFlags.every((f, i) => f === other.#mountFlags[i])
    );
  }

  /** A copy with another access mode. */
  withAccessMode(accessMode: AccessMode): VolumeCapability {
    return new VolumeCapability(accessMode, this.attachment, {
      fsType: this.fsType,
      mountFlags: this.#mountFlags,
      volumeMountGroup: this.volumeMountGroup,
    });
  }

  toJSON(): Record<string, unknown> {
    if (this.isBlock) return { accessMode: this.accessMode, attachment: this.attachment };
    return {
      accessMode: this.accessMode,
      attachment: this.attachment,
      fsType: this.fsType,
      mountFlags: Array<string>(this.mountFlagCount).fill(REDACTED),
      volumeMountGroup: this.volumeMountGroup,
    };
  }

  toString(): string {
    if (this.isBlock) return `${this.accessMode}/block-device`;
    const flags = this.mountFlagCount ? ` flags=${this.mountFlagCount}x${REDACTED}` : '';
    const fs = this.fsType ? ` fs=${this.fsType}` : '';
    const group = this.volumeMountGroup ? ` group=${this.volumeMountGroup}` : '';
    return `${this.accessMode}/file-system${fs}${flags}${group}`;
  }

  [inspect.custom](): string {
    return `VolumeCapability(${this.toString()})`;
  }
}

/** True when `list` holds a capability equal by value to `cap`. */
export function includesCapability(list: readonly VolumeCapability[], cap: VolumeCapability): boolean {
  return list.some((c) => c.equals(cap));
}

/** A capability as users and job files write it. */
export interface CapabilityRequest {
  accessMode: string;
  attachmentMode: string;
  fsType?: string;
  mountFlags?: readonly string[];
  mountGroup?: string;
}

/**
 * Builds a VolumeCapability from user input, checking it: known access and
 * attachment modes, no filesystem options on a block device, and the
 * SINGLE_NODE_*_WRITER modes only for plugins that advertise them
 * (`pluginSupportsSingleNodeMultiWriter`; pass undefined when not yet known).
 * Throws CsiRequestError naming the bad field.
 */
export function capabilityFromRequest(
  req: CapabilityRequest,
  opts: { pluginSupportsSingleNodeMultiWriter?: boolean } = {},
): VolumeCapability {
  if (!(ACCESS_MODES as readonly string[]).includes(req.accessMode)) {
    throw new CsiRequestError(`unknown access mode "${req.accessMode}"; expected one of ${ACCESS_MODES.join(', ')}`, 'access_mode');
  }
  if (!(ATTACHMENT_MODES as readonly string[]).includes(req.attachmentMode)) {
    throw new CsiRequestError(
      `unknown attachment mode "${req.attachmentMode}"; expected one of ${ATTACHMENT_MODES.join(', ')}`,
      'attachment_mode',
    );
  }
  const accessMode = req.accessMode as AccessMode;
  if (opts.pluginSupportsSingleNodeMultiWriter === false && SINGLE_NODE_MULTI_WRITER_MODES.includes(accessMode)) {
    throw new CsiRequestError(
      `access mode "${accessMode}" needs a plugin with the SINGLE_NODE_MULTI_WRITER capability`,
      'access_mode',
    );
  }
  if (req.attachmentMode === 'block-device') {
    if (req.fsType || req.mountFlags?.length || req.mountGroup) {
      throw new CsiRequestError('a block-device volume takes no fs_type, mount_flags or mount group', 'access_type');
    }
    return VolumeCapability.block(accessMode);
  }
  for (const flag of req.mountFlags ?? []) {
    if (flag === '') throw new CsiRequestError('mount flags must not be empty strings', 'mount_flags');
  }
  return VolumeCapability.mount(accessMode, {
    fsType: req.fsType ?? '',
    mountFlags: req.mountFlags ?? [],
    volumeMountGroup: req.mountGroup ?? '',
  });
}

/** The outcome of checking a ValidateVolumeCapabilities answer. */
export type ValidationVerdict = { validated: true } | { validated: false; reason: string };

/**
 * Judges a ValidateVolumeCapabilities answer the way the spec means it:
 * - `confirmed` unset: not validated (which is not "invalid"); the reason
 *   carries the plugin's message when it gave one.
 * - `confirmed` set: every requested capability must be among the confirmed
 *   ones (by value), and each requested context/parameter key the plugin
 *   echoes must carry the same value. An older plugin that drops a field it
 *   does not know fails here, as it should.
 */
export function checkValidation(
  requested: {
    volumeCapabilities: readonly VolumeCapability[];
    volumeContext?: Record<string, string>;
    parameters?: Record<string, string>;
    mutableParameters?: Record<string, string>;
  },
  answer: ValidationAnswer,
): ValidationVerdict {
  const message = answer.message.trim();
  if (!answer.confirmed) {
    return { validated: false, reason: message ? `plugin did not confirm: ${message}` : 'plugin did not confirm the capabilities' };
  }
  const confirmed = answer.confirmed;
  for (const cap of requested.volumeCapabilities) {
    if (!includesCapability(confirmed.volumeCapabilities, cap)) {
      return { validated: false, reason: `capability ${cap.toString()} was requested but not confirmed` };
    }
  }
  const maps: Array<[string, Record<string, string> | undefined, Record<string, string>]> = [
    ['volume context', requested.volumeContext, confirmed.volumeContext],
    ['parameter', requested.parameters, confirmed.parameters],
    ['mutable parameter', requested.mutableParameters, confirmed.mutableParameters],
  ];
  for (const [what, asked, got] of maps) {
    for (const [key, value] of Object.entries(asked ?? {})) {
      if (key in got && got[key] !== value) {
        return { validated: false, reason: `${what} "${key}" was confirmed with a different value` };
      }
    }
  }
  return { validated: true };
}
