// The node side of a fake node agent's connection: the NodeConnections a
// FakeNodeAgent answers through, handing each answer to the node's
// WebSocket, and `deliver` for the server's calls that come in on it. Test use only.

import type { WebSocket } from 'ws';
import type { NodeConnections } from '../../../src/server/noderpc/index.js';
import type { NodeRpcRequest } from '../../../src/structs/index.js';

/** `socket` is read at each answer: the test may open the WebSocket after building the bridge. */
export function socketBridge(socket: () => WebSocket): { connections: NodeConnections; deliver: (msg: NodeRpcRequest) => void } {
  let transport: { send(msg: NodeRpcRequest): void } | undefined;
  const connections = {
    attach: (_nodeId: string, t: { send(msg: NodeRpcRequest): void }) => {
      transport = t;
    },
    detach: () => {
      transport = undefined;
    },
    receive: (_nodeId: string, answer: unknown) => socket().send(JSON.stringify(answer)),
  } as unknown as NodeConnections;
  return { connections, deliver: (msg) => transport?.send(msg) };
}
