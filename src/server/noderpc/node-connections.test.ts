import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AbortedError } from '../../lib/index.js';
import type { NodeRpcRequest } from '../../structs/index.js';
import { NodeConnections, NodeRpcCallError, type NodeTransport } from './index.js';

/** A transport that keeps what it was sent; the test answers through `connections.receive`. */
function recordingTransport(): NodeTransport & { sent: NodeRpcRequest[]; closed: boolean } {
  const t = {
    sent: [] as NodeRpcRequest[],
    closed: false,
    send(msg: NodeRpcRequest) {
      t.sent.push(msg);
    },
    close() {
      t.closed = true;
    },
  };
  return t;
}

const unpublish = { pluginId: 'p', volumeId: 'v', nodeId: 'x', secrets: {} };

describe('NodeConnections', () => {
  it('fails fast with NODE_UNREACHABLE when the node has no connection', async () => {
    const conns = new NodeConnections();
    await assert.rejects(conns.call('n1', 'csi.controller.unpublish', unpublish), (e: unknown) => {
      assert.ok(e instanceof NodeRpcCallError);
      assert.equal(e.code, 'NODE_UNREACHABLE');
      assert.ok(e.retryable && e.final, 'nothing was sent: final, and another node may serve it');
      assert.match(e.message, /n1 is not connected/);
      return true;
    });
  });

  it('delivers the answer or the node error of a call, matched by ID', async () => {
    const conns = new NodeConnections();
    const t = recordingTransport();
    conns.attach('n1', t);
    const ok = conns.call('n1', 'csi.controller.unpublish', unpublish);
    const bad = conns.call('n1', 'csi.controller.unpublish', unpublish);
    assert.equal(t.sent.length, 2);
    assert.equal(t.sent[0]!.method, 'csi.controller.unpublish');
    conns.receive('n1', { id: t.sent[1]!.id, error: { code: 'CSI_FAILED_PRECONDITION', message: 'attached elsewhere', final: true, retryable: false } });
    conns.receive('n1', { id: t.sent[0]!.id, result: { alreadyDone: true } });
    assert.deepEqual(await ok, { alreadyDone: true });
    await assert.rejects(bad, (e: unknown) => e instanceof NodeRpcCallError && e.code === 'CSI_FAILED_PRECONDITION' && !e.retryable && /attached elsewhere/.test(e.message));
    conns.receive('n1', { id: 'nobody', result: {} });
    conns.receive('n1', 'garbage');
  });

  it('fails calls in flight as uncertain when the connection closes or is replaced, and ignores a late detach of the old one', async () => {
    const conns = new NodeConnections();
    const first = recordingTransport();
    conns.attach('n1', first);
    const inFlight = conns.call('n1', 'csi.controller.unpublish', unpublish);
    const second = recordingTransport();
    conns.attach('n1', second);
    await assert.rejects(inFlight, (e: unknown) => e instanceof NodeRpcCallError && e.code === 'NODE_UNREACHABLE' && e.uncertain);
    assert.ok(first.closed);
    conns.detach('n1', first);
    assert.ok(conns.connected('n1'), 'the new connection stays');
    const onSecond = conns.call('n1', 'csi.controller.unpublish', unpublish);
    conns.detach('n1', second);
    await assert.rejects(onSecond, (e: unknown) => e instanceof NodeRpcCallError && e.code === 'NODE_UNREACHABLE');
    assert.equal(conns.connected('n1'), false);
  });

  it('times out (uncertain) and aborts', async () => {
    const conns = new NodeConnections();
    conns.attach('n1', recordingTransport());
    await assert.rejects(
      conns.call('n1', 'csi.controller.unpublish', unpublish, { timeoutMs: 1 }),
      (e: unknown) => e instanceof NodeRpcCallError && e.code === 'NODE_TIMEOUT' && e.uncertain,
    );
    const ac = new AbortController();
    const call = conns.call('n1', 'csi.controller.unpublish', unpublish, { signal: ac.signal });
    ac.abort();
    await assert.rejects(call, AbortedError);
  });
});
