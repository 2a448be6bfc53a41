// Dynamic node meta (`berth node meta apply`) over the client config's static meta, kept in the real client state file.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { NODE_META_BUCKET, NodeMeta } from './_node-meta.js';
import { SqliteClientStateStore } from './state/index.js';

const dir = mkdtempSync(path.join(tmpdir(), 'berth-meta-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('node meta', () => {
  it('merges dynamic meta over static, hides a static key with null, and keeps it across an agent restart', () => {
    const file = path.join(dir, 'client.db');
    let store = SqliteClientStateStore.open(file);
    let meta = new NodeMeta({ rack: 'r1', zone: 'a' });
    meta.load(store.bucket(NODE_META_BUCKET));
    const view = meta.apply({ rack: 'r2', tier: 'gold', zone: null }, []);
    assert.deepEqual(view.meta, { rack: 'r2', tier: 'gold' });
    assert.deepEqual(view.static, { rack: 'r1', zone: 'a' });
    store.close();

    // A restarted agent reads its dynamic meta back from its state.
    store = SqliteClientStateStore.open(file);
    meta = new NodeMeta({ rack: 'r1', zone: 'a' });
    meta.load(store.bucket(NODE_META_BUCKET));
    assert.deepEqual(meta.merged(), { rack: 'r2', tier: 'gold' });

    // Unsetting a dynamic key returns it to its static value.
    assert.deepEqual(meta.apply({}, ['rack', 'zone']).meta, { rack: 'r1', zone: 'a', tier: 'gold' });
    // A null removes a dynamic key outright, as Nomad's does: nothing of it is left to remember.
    const removed = meta.apply({ tier: null }, []);
    assert.deepEqual([removed.meta, removed.dynamic], [{ rack: 'r1', zone: 'a' }, {}]);
    store.close();
  });
});
