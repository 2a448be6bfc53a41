// The paged listing both the CSI client and the server's volume registry use.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CsiError, CsiProtocolError, GRPC_CODES } from './errors.js';
import { listAllPages } from './paging.js';
import type { Page } from './types.js';

/** Pages of `entries`, `size` at a time, with tokens "1", "2", ...; records the tokens asked for. */
function pager(entries: string[], size: number) {
  const asked: string[] = [];
  const fetchPage = async (token: string): Promise<Page<string>> => {
    asked.push(token);
    const from = Number(token || '0');
    const next = from + size;
    return { entries: entries.slice(from, next), nextToken: next < entries.length ? String(next) : '' };
  };
  return { asked, fetchPage };
}

const aborted = () => new CsiError('ListVolumes', GRPC_CODES.ABORTED, 'stale token');

describe('listAllPages', () => {
  it('follows the tokens until the last page', async () => {
    const p = pager(['a', 'b', 'c', 'd', 'e'], 2);
    assert.deepEqual(await listAllPages(p.fetchPage), ['a', 'b', 'c', 'd', 'e']);
    assert.deepEqual(p.asked, ['', '2', '4']);
  });

  it('starts again from the top when a token went stale, and gives up after `restarts` restarts', async () => {
    const p = pager(['a', 'b', 'c'], 1);
    let failures = 1;
    const flaky = (token: string) => (token === '1' && failures-- > 0 ? Promise.reject(aborted()) : p.fetchPage(token));
    assert.deepEqual(await listAllPages(flaky), ['a', 'b', 'c']);
    assert.deepEqual(p.asked, ['', '', '1', '2'], 'no entry is listed twice');

    await assert.rejects(listAllPages(() => Promise.reject(aborted()), { restarts: 2 }), (e: unknown) => e instanceof CsiError);
  });

  it('restarts on what the caller says is a stale token, and on nothing else', async () => {
    let calls = 0;
    const stale = new Error('routed ABORTED');
    const once = async (): Promise<Page<string>> => {
      if (calls++ === 0) throw stale;
      return { entries: ['x'], nextToken: '' };
    };
    assert.deepEqual(await listAllPages(once, { staleToken: (e) => e === stale }), ['x']);
    await assert.rejects(listAllPages(() => Promise.reject(new Error('boom'))), /boom/);
  });

  it('refuses a plugin that hands back a token it already gave (a loop)', async () => {
    const loop = async (token: string): Promise<Page<string>> => ({ entries: [token], nextToken: 't1' });
    await assert.rejects(listAllPages(loop), (e: unknown) => e instanceof CsiProtocolError && /token "t1" twice/.test(e.message));
  });
});
