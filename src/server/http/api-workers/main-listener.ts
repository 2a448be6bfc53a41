// Main's own listener on the API's socket, while front workers accept on it.
// Node 20 cannot pause a listener (and `reusePort` needs Node >= 22.12), and
// libuv drains the whole accept queue whenever main's listening handle is
// polled: with workers beside it, main read ~30% of a burst's registrations
// itself and stayed the bottleneck. So once the workers accept, main swaps
// its polled handle for a duplicate of the socket that is never polled
// (listen-dup.ts): the socket stays open and answers `address()`, main
// accepts nothing, and the workers take every connection. When no worker
// accepts (all ended), main polls that duplicate again and serves alone,
// as a server without workers does.

import type { Server } from 'node:net';
import { duplicateListener, type TcpHandle } from './listen-dup.js';

/** The backlog Node's listen() gives a server that names none. */
const BACKLOG = 511;

type ServerWithHandle = Server & { _handle: (TcpHandle & Record<symbol, unknown>) | null };

export class MainListener {
  readonly #server: ServerWithHandle;
  #accepting = true;
  #swapping = false;

  /** `server`: main's listening HTTP server (its handle is the API's socket). */
  constructor(server: Server) {
    this.#server = server as ServerWithHandle;
  }

  /** Whether main accepts connections on the API's socket now. */
  get accepting(): boolean {
    return this.#accepting;
  }

  /** The fd of main's handle on the API's socket (what a worker copies); -1 once closed. */
  get fd(): number {
    return this.#server._handle?.fd ?? -1;
  }

  /**
   * Stops accepting: main's handle is replaced by an unpolled duplicate
   * (`address()` still answers), then closed. `stillWanted` is asked once
   * the duplicate came: false leaves main accepting. Resolves whether main
   * stopped. Never rejects (main keeps accepting when the copy fails). Safe
   * to repeat. The fd `fd` named before changes: a copy must not be in the
   * making meanwhile (the caller's: it hands off only with every worker
   * listening).
   */
  async stop(stillWanted: () => boolean): Promise<boolean> {
    if (!this.#accepting || this.#swapping) return false;
    const polled = this.#server._handle;
    if (!polled) return false;
    this.#swapping = true;
    let spare: TcpHandle & Record<symbol, unknown>;
    try {
      spare = (await duplicateListener(polled.fd)) as TcpHandle & Record<symbol, unknown>;
    } catch {
      return false;
    } finally {
      this.#swapping = false;
    }
    if (!stillWanted() || this.#server._handle !== polled) {
      spare.close();
      return false;
    }
    // What net.Server set on its handle when it listened: its connection callback and its owner.
    spare.onconnection = polled.onconnection;
    for (const sym of Object.getOwnPropertySymbols(polled)) spare[sym] = polled[sym];
    this.#server._handle = spare;
    polled.close();
    this.#accepting = false;
    return true;
  }

  /** Accepts again (no worker accepts): main polls its handle. Safe to repeat. Throws when the socket cannot listen. */
  resume(): void {
    const handle = this.#server._handle;
    if (this.#accepting || !handle) return;
    const err = handle.listen(BACKLOG);
    if (err) throw new Error(`main could not listen on the API's socket again (${err})`);
    this.#accepting = true;
  }
}
