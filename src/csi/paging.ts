import { CsiError, CsiProtocolError } from './errors.js';
import type { Page } from './types.js';

/** Whether a failed page call means the paging token went stale (CSI ABORTED). */
function abortedByPlugin(err: unknown): boolean {
  return err instanceof CsiError && err.grpcCodeName === 'ABORTED';
}

/**
 * Every entry of a paged CSI list (ListVolumes, ListSnapshots), page by page
 * from the empty token. When a page fails with a stale token (`staleToken`,
 * default: a CsiError ABORTED) the listing restarts from the top, at most
 * `restarts` times (default 3). Throws CsiProtocolError when the plugin hands
 * back a token it already gave (a loop), and any other error of `fetchPage`
 * as is. Waits for every page; abort through whatever `fetchPage` takes.
 */
export async function listAllPages<T>(
  fetchPage: (token: string) => Promise<Page<T>>,
  opts: { restarts?: number | undefined; staleToken?: (err: unknown) => boolean } = {},
): Promise<T[]> {
  const restarts = opts.restarts ?? 3;
  const staleToken = opts.staleToken ?? abortedByPlugin;
  for (let attempt = 0; ; attempt++) {
    const out: T[] = [];
    let token = '';
    try {
      const seen = new Set<string>();
      do {
        const page = await fetchPage(token);
        out.push(...page.entries);
        if (page.nextToken && seen.has(page.nextToken)) throw new CsiProtocolError('List', `plugin returned token "${page.nextToken}" twice`);
        seen.add(page.nextToken);
        token = page.nextToken;
      } while (token);
      return out;
    } catch (err) {
      if (attempt < restarts && staleToken(err)) continue;
      throw err;
    }
  }
}
