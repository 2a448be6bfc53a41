import type { Channel, Metadata } from 'nice-grpc';
import { type CallOptions } from './base-plugin.js';
import { callError, shutdownError } from './_status.js';
import { linkSignals } from '../../lib/index.js';

/** What every call through a PluginConnection gets: the combined signal and a trailer sink. */
export interface WireCallOptions {
  readonly signal: AbortSignal;
  onTrailer(trailer: Metadata): void;
}

/**
 * The host's connection to one plugin process: the gRPC channel plus the
 * knowledge of whether the plugin is gone. Every call made through it fails
 * with `DRIVER_PLUGIN_SHUTDOWN` at once after `close()` or after `exited`
 * resolves, and in-flight calls and streams are cancelled then (no hang).
 * Does not own the channel: the PluginProcess closes it.
 */
export class PluginConnection {
  readonly plugin: string;
  readonly channel: Channel;
  readonly #done = new AbortController();

  constructor(opts: { channel: Channel; plugin: string; exited?: Promise<unknown> }) {
    this.channel = opts.channel;
    this.plugin = opts.plugin;
    void opts.exited?.then(() => this.close());
  }

  /** True once the plugin is known to be gone. */
  get shutDown(): boolean {
    return this.#done.signal.aborted;
  }

  /** Marks the plugin gone: in-flight calls end with DRIVER_PLUGIN_SHUTDOWN. Safe twice. */
  close(): void {
    this.#done.abort();
  }

  /** One unary call with Berth's error mapping. Throws DriverPluginError / AbortedError. */
  async unary<T>(rpc: string, call: (o: WireCallOptions) => Promise<T>, opts: CallOptions = {}): Promise<T> {
    if (this.shutDown) throw shutdownError(this.plugin, rpc);
    const link = opts.signal ? linkSignals([opts.signal, this.#done.signal]) : undefined;
    let trailer: Metadata | undefined;
    try {
      return await call({ signal: link?.signal ?? this.#done.signal, onTrailer: (t) => (trailer = t) });
    } catch (err) {
      throw callError(this.plugin, rpc, err, { shutDown: this.shutDown, callerSignal: opts.signal, trailer });
    } finally {
      link?.unlink();
    }
  }

  /**
   * A server stream with Berth's error mapping: ends quietly when the
   * caller's signal fires, throws DRIVER_PLUGIN_SHUTDOWN when the plugin goes
   * away, DriverPluginError for what the plugin answered.
   */
  async *stream<T>(rpc: string, call: (o: WireCallOptions) => AsyncIterable<T>, opts: { signal?: AbortSignal } = {}): AsyncGenerator<T, void, undefined> {
    if (this.shutDown) throw shutdownError(this.plugin, rpc);
    if (opts.signal?.aborted) return;
    const link = opts.signal ? linkSignals([opts.signal, this.#done.signal]) : undefined;
    let trailer: Metadata | undefined;
    try {
      yield* call({ signal: link?.signal ?? this.#done.signal, onTrailer: (t) => (trailer = t) });
    } catch (err) {
      if (!this.shutDown && opts.signal?.aborted) return;
      throw callError(this.plugin, rpc, err, { shutDown: this.shutDown, trailer });
    } finally {
      link?.unlink();
    }
    if (this.shutDown) throw shutdownError(this.plugin, rpc);
  }
}
