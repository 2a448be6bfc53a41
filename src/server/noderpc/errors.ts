import { BerthError } from '../../lib/index.js';
import type { NodeRpcError } from '../../structs/index.js';

/**
 * A server-to-node call that failed. Codes: NODE_UNREACHABLE (the node has
 * no open connection, or it closed while the call was in flight: fails fast,
 * retryable elsewhere), NODE_TIMEOUT (no answer within the deadline: the
 * outcome is unknown), or the code the node answered with (`CSI_<GRPC CODE>`
 * for plugin failures). `final`/`retryable` follow src/csi's classification
 * when the node sent them.
 */
export class NodeRpcCallError extends BerthError {
  readonly nodeId: string;
  readonly method: string;
  readonly final: boolean;
  readonly retryable: boolean;

  constructor(
    nodeId: string,
    method: string,
    code: string,
    message: string,
    opts: { final: boolean; retryable: boolean; cause?: unknown },
  ) {
    super(code, message, { cause: opts.cause });
    this.nodeId = nodeId;
    this.method = method;
    this.final = opts.final;
    this.retryable = opts.retryable;
  }

  /** True when the step may have happened (its negation is owed on teardown). */
  get uncertain(): boolean {
    return !this.final;
  }

  /** From an error the node answered with. */
  static fromAnswer(nodeId: string, method: string, err: NodeRpcError): NodeRpcCallError {
    return new NodeRpcCallError(nodeId, method, err.code, `node ${nodeId}: ${method}: ${err.message}`, {
      final: err.final ?? true,
      retryable: err.retryable ?? false,
    });
  }
}
