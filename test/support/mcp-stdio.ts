// A Model Context Protocol client over a child's stdin/stdout (newline-
// delimited JSON-RPC 2.0, MCP's stdio transport): just enough to drive an MCP
// server someone else wrote (initialize, tools/list, tools/call) from a test.

import { spawn, type ChildProcess } from 'node:child_process';

/** One item of a tool's answer; MCP servers answer tools with text items. */
export interface ToolContent {
  type: string;
  text?: string;
}

/** What tools/call resolves with: the server's content and whether the tool failed. */
export interface ToolResult {
  content: ToolContent[];
  isError: boolean;
  /** The text items joined by newlines. */
  text: string;
}

interface RpcAnswer {
  id?: number;
  result?: unknown;
  error?: { code: number; message: string };
}

/**
 * An MCP server as a child process. start() spawns it and completes the
 * initialize handshake; call() runs one tool; close() ends the child (safe
 * twice). Every request fails after `timeoutMs`, and at once when the child
 * exits (with its stderr in the message).
 */
export class McpStdioClient {
  readonly #cmd: string;
  readonly #args: readonly string[];
  readonly #env: Record<string, string>;
  readonly #timeoutMs: number;
  #child: ChildProcess | undefined;
  #nextId = 1;
  #pending = new Map<number, { resolve: (a: RpcAnswer) => void; reject: (e: Error) => void }>();
  #buffer = '';
  stderr = '';
  serverInfo: { name?: string; version?: string } = {};

  constructor(cmd: string, args: readonly string[], opts: { env: Record<string, string>; timeoutMs?: number }) {
    this.#cmd = cmd;
    this.#args = args;
    this.#env = opts.env;
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
  }

  /** Spawns the server and initializes the session; rejects if it exits or fails to answer. */
  async start(): Promise<this> {
    const child = spawn(this.#cmd, this.#args, { env: this.#env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child = child;
    child.stdout!.setEncoding('utf8').on('data', (d: string) => this.#onData(d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    child.on('exit', (code, signal) => {
      const err = new Error(`the MCP server exited (code ${code}, signal ${signal})\nstderr:\n${this.stderr.slice(-4000)}`);
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    });
    child.on('error', (err) => {
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    });
    const init = (await this.#request('initialize', {
      protocolVersion: '2024-11-05',
      capabilities: {},
      clientInfo: { name: 'berth-tests', version: '0' },
    })) as { serverInfo?: { name?: string; version?: string } };
    this.serverInfo = init.serverInfo ?? {};
    this.#send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return this;
  }

  /** The names of the tools the server offers. */
  async tools(): Promise<string[]> {
    const listed = (await this.#request('tools/list', {})) as { tools: Array<{ name: string }> };
    return listed.tools.map((t) => t.name);
  }

  /** Calls tool `name`; a tool that failed resolves with isError (the JSON-RPC call itself succeeded). */
  async call(name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
    const r = (await this.#request('tools/call', { name, arguments: args })) as { content?: ToolContent[]; isError?: boolean };
    const content = r.content ?? [];
    return {
      content,
      isError: r.isError === true,
      text: content
        .filter((c) => c.type === 'text')
        .map((c) => c.text ?? '')
        .join('\n'),
    };
  }

  /** Ends the server (stdin closed, then SIGKILL after 5 s). Safe to repeat. */
  async close(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin!.end();
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }

  #send(msg: unknown): void {
    this.#child!.stdin!.write(`${JSON.stringify(msg)}\n`);
  }

  #request(method: string, params: unknown): Promise<unknown> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`${method}: no answer within ${this.#timeoutMs} ms\nstderr:\n${this.stderr.slice(-4000)}`));
      }, this.#timeoutMs);
      this.#pending.set(id, {
        resolve: (a) => {
          clearTimeout(timer);
          if (a.error) reject(new Error(`${method}: JSON-RPC error ${a.error.code}: ${a.error.message}`));
          else resolve(a.result);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.#send({ jsonrpc: '2.0', id, method, params });
    });
  }

  #onData(d: string): void {
    this.#buffer += d;
    for (let nl = this.#buffer.indexOf('\n'); nl >= 0; nl = this.#buffer.indexOf('\n')) {
      const line = this.#buffer.slice(0, nl).trim();
      this.#buffer = this.#buffer.slice(nl + 1);
      if (!line) continue;
      let msg: RpcAnswer;
      try {
        msg = JSON.parse(line) as RpcAnswer;
      } catch {
        continue; // not a JSON-RPC line (a server may log to stdout)
      }
      if (typeof msg.id !== 'number') continue; // a notification
      const p = this.#pending.get(msg.id);
      this.#pending.delete(msg.id);
      p?.resolve(msg);
    }
  }
}
