// The client's limits on fetching artifacts (Nomad's client `artifact` block:
// http_read_timeout, http_max_size, git_timeout, decompression_size_limit,
// decompression_file_count_limit), with Nomad's defaults, and the byte sizes
// they are written in ("100GB", "512MiB", as go-humanize reads them).

/** What one artifact fetch may take. Zero for a size or count: no limit (as Nomad's). */
export interface ArtifactLimits {
  /** An http(s) download, response and body, must end within this. */
  httpReadTimeoutMs: number;
  /** An http(s) body larger than this fails the download. */
  httpMaxBytes: number;
  /** Each git command (clone, checkout, submodules) must end within this. */
  gitTimeoutMs: number;
  /** An archive or compressed file unpacking to more than this (in all) fails. */
  decompressionSizeLimit: number;
  /** An archive with more entries than this fails. */
  decompressionFileCountLimit: number;
}

/** Nomad's DefaultArtifactConfig. */
export const DEFAULT_ARTIFACT_LIMITS: Readonly<ArtifactLimits> = Object.freeze({
  httpReadTimeoutMs: 30 * 60_000,
  httpMaxBytes: 100e9,
  gitTimeoutMs: 30 * 60_000,
  decompressionSizeLimit: 100e9,
  decompressionFileCountLimit: 4096,
});

const UNITS: Record<string, number> = {
  '': 1, b: 1,
  k: 1e3, kb: 1e3, m: 1e6, mb: 1e6, g: 1e9, gb: 1e9, t: 1e12, tb: 1e12,
  ki: 2 ** 10, kib: 2 ** 10, mi: 2 ** 20, mib: 2 ** 20, gi: 2 ** 30, gib: 2 ** 30, ti: 2 ** 40, tib: 2 ** 40,
};

/** A byte size as go-humanize's ParseBytes reads it ("100GB", "1.5 MiB", "4096"); undefined when it is not one. Pure. */
export function parseBytes(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  return m && unit !== undefined ? Math.floor(Number(m[1]) * unit) : undefined;
}
