import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { startEtcd, type EtcdCluster } from '../../../test/support/etcd.js';
import { eventually } from '../../../test/support/eventually.js';
import { EtcdLeadership } from './etcd-leadership.js';

describe('leader election on etcd', () => {
  let etcd: EtcdCluster;
  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    await etcd?.close();
  });

  function server(id: string, prefix: string): { l: EtcdLeadership; changes: boolean[] } {
    const l = new EtcdLeadership({ endpoints: etcd.endpoints, self: { id, address: `http://${id}.test:4646` }, prefix, leaseTtlSeconds: 2 });
    const changes: boolean[] = [];
    l.onChange((leading) => {
      changes.push(leading);
    });
    return { l, changes };
  }

  it('elects exactly one leader, which every server names, and members lists them all', async () => {
    const servers = ['a', 'b', 'c'].map((id) => server(id, '/t1/'));
    await Promise.all(servers.map((s) => s.l.start()));
    try {
      const leaders = servers.filter((s) => s.l.isLeader);
      assert.equal(leaders.length, 1);
      const leader = leaders[0]!.l.self;
      for (const s of servers) assert.deepEqual(s.l.leader, leader);
      const members = await servers[0]!.l.members();
      assert.deepEqual(
        members.map((m) => [m.id, m.leader, m.status]),
        ['a', 'b', 'c'].map((id) => [id, id === leader.id, 'alive']),
      );
      // A follower's fence never matches; the leader's is its term.
      for (const s of servers) assert.equal(s.l.fence().createRevision === '-1', !s.l.isLeader);
    } finally {
      await Promise.all(servers.map((s) => s.l.stop()));
    }
  });

  it('hands over when the leader stops, and the new term has a new fence', async () => {
    const servers = ['a', 'b'].map((id) => server(id, '/t2/'));
    await servers[0]!.l.start();
    await servers[1]!.l.start();
    assert.equal(servers[0]!.l.isLeader, true);
    const oldFence = servers[0]!.l.fence();
    await servers[0]!.l.stop();
    assert.deepEqual(servers[0]!.changes, [true, false]);
    await eventually('b leads', () => servers[1]!.l.isLeader);
    assert.notEqual(servers[1]!.l.fence().createRevision, oldFence.createRevision);
    assert.deepEqual(servers[1]!.changes, [true]);
    await servers[1]!.l.stop();
  });

  it('a leader whose lease is revoked behind its back steps down, and another takes over', async () => {
    const servers = ['a', 'b'].map((id) => server(id, '/t3/'));
    await servers[0]!.l.start();
    await servers[1]!.l.start();
    const admin = new Etcd3({ hosts: [...etcd.endpoints] });
    try {
      const kv = await admin.get('/t3/leader').exec();
      await admin.leaseClient.leaseRevoke({ ID: kv.kvs[0]!.lease });
      await eventually('b leads', () => servers[1]!.l.isLeader);
      await eventually('a stepped down', () => !servers[0]!.l.isLeader);
      assert.deepEqual(servers[0]!.changes, [true, false]);
    } finally {
      admin.close();
      await Promise.all(servers.map((s) => s.l.stop()));
    }
  });

  it('a follower whose lease ran out (its process stalled past the TTL) joins again and can take over', async () => {
    const servers = ['a', 'b'].map((id) => server(id, '/t4/'));
    await servers[0]!.l.start();
    await servers[1]!.l.start();
    const admin = new Etcd3({ hosts: [...etcd.endpoints] });
    try {
      const before = await admin.get('/t4/members/b').exec();
      await admin.leaseClient.leaseRevoke({ ID: before.kvs[0]!.lease });
      await eventually('b joined again with a new lease', async () => {
        const now = await admin.get('/t4/members/b').exec();
        return now.kvs.length === 1 && String(now.kvs[0]!.lease) !== String(before.kvs[0]!.lease);
      });
      await servers[0]!.l.stop();
      await eventually('b leads', () => servers[1]!.l.isLeader);
    } finally {
      admin.close();
      await Promise.all(servers.map((s) => s.l.stop()));
    }
  });

  it('a server that finds the election key in its own name under a lease it does not hold leads at once, not after that lease', async () => {
    // What a leader that stepped down while etcd was away finds when etcd returns (etcd gives
    // the old lease a fresh TTL), and what a killed leader finds when restarted under its name.
    const admin = new Etcd3({ hosts: [...etcd.endpoints] });
    const old = admin.lease(60, { autoKeepAlive: false });
    const a = server('a', '/t5/');
    try {
      const oldLease = await old.grant();
      await admin.put('/t5/leader').value(JSON.stringify({ id: 'a', address: 'http://a.test:4646' })).lease(oldLease).exec();
      await a.l.start();
      await eventually('a leads', () => a.l.isLeader);
      const key = (await admin.get('/t5/leader').exec()).kvs[0]!;
      assert.notEqual(String(key.lease), oldLease, 'the key is under its new lease');
      assert.equal(a.l.fence().createRevision, String(key.create_revision));
      assert.ok(Number((await admin.leaseClient.leaseTimeToLive({ ID: oldLease })).TTL) > 0, 'the earlier lease was not waited out');
    } finally {
      await a.l.stop();
      await old.revoke().catch(() => undefined);
      admin.close();
    }
  });
});
