// jsonObjects: Nomad's stream frames, however the network cuts them.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonObjects } from './json-values.js';

async function all(chunks: Array<string | Uint8Array>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const v of jsonObjects((async function* () { yield* chunks; })())) out.push(v);
  return out;
}

describe('jsonObjects', () => {
  it('reads objects back to back, one per line, and split anywhere (a multi-byte character too)', async () => {
    const text = '{"Data":"aGk=","Offset":2}{}\n{"File":"a/{b}\\"c","FileEvent":"file deleted"}\n{"x":[{"y":"é"}]}';
    const want = [{ Data: 'aGk=', Offset: 2 }, {}, { File: 'a/{b}"c', FileEvent: 'file deleted' }, { x: [{ y: 'é' }] }];
    assert.deepEqual(await all([text]), want);
    const bytes = Buffer.from(text);
    for (let cut = 1; cut < bytes.length; cut++) assert.deepEqual(await all([bytes.subarray(0, cut), bytes.subarray(cut)]), want, `cut at ${cut}`);
    assert.deepEqual(await all([...text]), want, 'one character at a time');
  });

  it('refuses what is not a sequence of objects, and an object cut off at the end', async () => {
    await assert.rejects(all(['{"a":1} x']), SyntaxError);
    await assert.rejects(all(['{"a":1']), /ended inside a JSON object/);
  });
});
