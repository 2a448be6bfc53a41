// The node connection's ping interval as the heartbeat TTL grows with the
// cluster (the servers' max_heartbeats_per_second): the pings reaching the
// leader stay bounded as the heartbeats do, and a silent server is still
// left well within the TTL.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connectionLivenessMs } from './node-connection.js';

describe('connectionLivenessMs', () => {
  it('keeps a small cluster\'s interval: a quarter of the TTL up to 5 s', () => {
    assert.equal(connectionLivenessMs(5_000), 1_250);
    assert.equal(connectionLivenessMs(30_000), 5_000);
  });

  it('bounds the pings a whole cluster sends the leader as the TTL grows with it, and leaves a silent server within a third of the TTL', () => {
    for (const nodes of [1_000, 2_500, 5_000, 10_000, 50_000]) {
      // The TTL the servers give at the default 100 heartbeats a second (server/nodes scaledHeartbeatTtl).
      const ttl = Math.max(30_000, (3 * nodes * 1000) / 100);
      const liveness = connectionLivenessMs(ttl);
      assert.ok(nodes / (liveness / 1000) <= 340, `${nodes} nodes ping the leader ${nodes / (liveness / 1000)} times a second`);
      assert.ok(2 * liveness <= ttl / 3, `${nodes} nodes: a silent server is left after ${2 * liveness} ms of a ${ttl} ms TTL`);
    }
  });
});
