// A server's replica of the etcd state, loaded again (what it does when its
// watch was cancelled because the revisions it had yet to see were compacted
// away): the events of the writes it missed are unknown, so its history must
// start at the reload. Had it kept the events from before, a reader that
// follows the history (a node's allocation list, a blocking read's touched
// keys, the event stream) would take the gap for "nothing happened". Real etcd.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { silentLogger } from '../../lib/index.js';
import { EtcdReplica } from './_etcd-replica.js';
import { openEtcdStateStore } from './index.js';
import { eventually } from '../../../test/support/eventually.js';
import { startEtcd, type EtcdCluster } from '../../../test/support/etcd.js';

describe('the etcd replica', () => {
  let etcd: EtcdCluster;
  before(async () => {
    etcd = await startEtcd();
  });
  after(() => etcd.close());

  it('starts its event history again at a reload, so the writes it missed never look like none', async () => {
    const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/reload' });
    const replica = new EtcdReplica({ client: new Etcd3({ hosts: [...etcd.endpoints] }), prefix: '/reload', logger: silentLogger(), eventHistory: 1000, writeTimeoutMs: 5000 });
    try {
      await replica.load();
      const put = (id: string) => store.write((txn) => txn.put('namespaces', { name: id, description: '', meta: {} }));
      const first = await put('a');
      await eventually('the replica to follow the write', () => replica.index >= first.index);
      assert.ok(replica.events.some((e) => e.key === 'a'), 'the write is in the history');
      const kept = replica.events;

      await replica.load();
      assert.deepEqual(replica.events, [], 'no event from before the reload is offered as history');
      assert.ok(replica.historyStart > first.index, `the history starts after the reload (${replica.historyStart} > ${first.index})`);
      assert.ok(kept.some((e) => e.key === 'a'), 'a snapshot taken before keeps the history it had');

      const second = await put('b');
      await eventually('the replica to follow the next write', () => replica.events.some((e) => e.key === 'b' && e.index === second.index));
      assert.ok(replica.historyStart <= second.index);
    } finally {
      replica.close();
      store.close();
    }
  });
});
