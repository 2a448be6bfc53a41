import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../lib/index.js';
import { FIXTURE_START_MS, nodePlugin, pluginDir, tsPlugin } from '../../../test/support/plugin-fixtures.js';
import { eventually } from '../../../test/support/eventually.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { checkHandshake, GoPluginError, handshakeEnv, launchPlugin, NOMAD_HANDSHAKE, servePlugin, type GoPluginErrorCode } from './index.js';

// A plugin that serves nothing but go-plugin's own services, through Berth's serve side.
const SERVED = `
import { servePlugin, NOMAD_HANDSHAKE } from '@berth/plugins/index.ts';
import { createLogger } from '@berth/lib/index.ts';
const hang = process.env.FIXTURE_MODE === 'hang';
const logger = createLogger({ level: 'debug', destination: process.stderr });
const server = await servePlugin({ handshake: NOMAD_HANDSHAKE, logger, register: () => {}, onShutdown: hang ? () => new Promise(() => {}) : undefined });
const ticker = setInterval(() => server.writeStdio('stdout', Buffer.from('tick from the plugin\\n')), 20);
process.stderr.write(JSON.stringify({ '@level': 'info', '@message': 'driver ready', '@module': 'fixture', answer: 42 }) + '\\n');
process.stderr.write('a plain stderr line\\n');
await server.stopped;
clearInterval(ticker);
process.exit(0);
`;

describe('launching a go-plugin process (host side)', () => {
  const tmp = pluginDir();
  after(() => tmp.remove());

  const rejects = async (file: string, code: GoPluginErrorCode, pattern?: RegExp, startTimeoutMs?: number): Promise<void> => {
    await assert.rejects(launchPlugin({ path: file, handshake: NOMAD_HANDSHAKE, startTimeoutMs }), (err: unknown) => {
      assert.ok(err instanceof GoPluginError, String(err));
      assert.equal(err.code, code, err.message);
      assert.ok(err.message.includes(file), `the error names the plugin: ${err.message}`);
      if (pattern) assert.match(err.message, pattern);
      return true;
    });
  };

  it('refuses a plugin that prints garbage, and kills it', async () => {
    const file = nodePlugin(tmp.dir, 'garbage', `console.log('hello, I am not a plugin'); setInterval(() => {}, 1000);`);
    await rejects(file, 'GOPLUGIN_BAD_HANDSHAKE', /hello, I am not a plugin/);
  });

  it('refuses a truncated handshake line', async () => {
    const file = nodePlugin(tmp.dir, 'truncated', `process.stdout.write('1|2|unix');`);
    await rejects(file, 'GOPLUGIN_BAD_HANDSHAKE', /truncated/);
  });

  it('reports a plugin that rejects the magic cookie', async () => {
    // What a go-plugin binary built for another host does: compare its own cookie, print go-plugin's message, exit 1.
    const file = nodePlugin(
      tmp.dir,
      'other-cookie',
      `if (process.env.OTHER_PLUGIN_COOKIE !== 'x') { process.stderr.write('This binary is a plugin. These are not meant to be executed directly.\\nPlease execute the program that consumes these plugins, which will\\nload any plugins automatically\\n'); process.exit(1); }`,
    );
    await rejects(file, 'GOPLUGIN_COOKIE_REJECTED', /magic cookie/);
  });

  it('refuses unsupported core and app protocol versions and netrpc', async () => {
    await rejects(nodePlugin(tmp.dir, 'core2', `console.log('2|2|unix|/tmp/x.sock|grpc|'); setInterval(() => {}, 1000);`), 'GOPLUGIN_VERSION_UNSUPPORTED', /core protocol version 2/);
    await rejects(nodePlugin(tmp.dir, 'app7', `console.log('1|7|unix|/tmp/x.sock|grpc|'); setInterval(() => {}, 1000);`), 'GOPLUGIN_VERSION_UNSUPPORTED', /protocol version 7/);
    await rejects(nodePlugin(tmp.dir, 'netrpc', `console.log('1|2|unix|/tmp/x.sock|netrpc'); setInterval(() => {}, 1000);`), 'GOPLUGIN_VERSION_UNSUPPORTED', /netrpc/);
  });

  it('refuses a plugin that listens on TCP', async () => {
    await rejects(nodePlugin(tmp.dir, 'tcp', `console.log('1|2|tcp|127.0.0.1:10001|grpc|'); setInterval(() => {}, 1000);`), 'GOPLUGIN_NETWORK_UNSUPPORTED', /tcp 127\.0\.0\.1:10001/);
  });

  it('gives up on a plugin that never prints its handshake', async () => {
    await rejects(nodePlugin(tmp.dir, 'silent', `setInterval(() => {}, 1000);`), 'GOPLUGIN_HANDSHAKE_TIMEOUT', /no handshake line/, 300);
  });

  it('reports a plugin that prints its handshake and exits, or dies before it', async () => {
    await rejects(nodePlugin(tmp.dir, 'prints-exits', `console.log('1|2|unix|${tmp.dir}/gone.sock|grpc|');`), 'GOPLUGIN_EXITED', /after its handshake/);
    await rejects(nodePlugin(tmp.dir, 'dies', `process.stderr.write('panic: no config\\n'); process.exit(3);`), 'GOPLUGIN_EXITED', /code 3.*panic: no config/);
  });

  it('reports an executable that cannot start', async () => {
    await rejects(`${tmp.dir}/does-not-exist`, 'GOPLUGIN_START_FAILED');
  });

  it('honours the caller\'s AbortSignal', async () => {
    const file = nodePlugin(tmp.dir, 'silent2', `setInterval(() => {}, 1000);`);
    const ac = new AbortController();
    const launching = launchPlugin({ path: file, handshake: NOMAD_HANDSHAKE, signal: ac.signal });
    ac.abort();
    await assert.rejects(launching, (err: unknown) => (err as { code?: string }).code === 'ABORTED');
  });
});

describe('a plugin served by Berth, hosted by Berth', () => {
  const tmp = pluginDir();
  let file = '';
  before(() => {
    file = tsPlugin(tmp.dir, 'served', SERVED);
  });
  after(() => tmp.remove());

  it('handshakes, passes the health check, forwards stdio and stderr logs, ignores SIGINT and stops through GRPCController', async () => {
    const logs: Record<string, unknown>[] = [];
    const logger = createLogger({ level: 'trace', destination: { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) } });
    const stdio: string[] = [];
    const plugin = await launchPlugin({ path: file, handshake: NOMAD_HANDSHAKE, startTimeoutMs: FIXTURE_START_MS, logger, onStdio: (ch, d) => stdio.push(`${ch}:${Buffer.from(d).toString()}`) });
    assert.equal(plugin.name, 'served');
    assert.equal(plugin.appVersion, 2);
    await eventually('a GRPCStdio chunk', () => stdio.find((s) => s.startsWith('stdout:tick from the plugin')));
    const hclog = await eventually('the hclog JSON line in the agent log', () => logs.find((l) => l.msg === 'driver ready'));
    assert.equal(hclog.level, 30); // info
    assert.equal(hclog.answer, 42);
    assert.equal(hclog.plugin, 'served');
    await eventually('the plain stderr line in the agent log', () => logs.find((l) => l.msg === 'a plain stderr line'));

    process.kill(plugin.pid as number, 'SIGINT');
    await eventually('the plugin logging that it ignored SIGINT', () => logs.find((l) => String(l.msg).includes('received SIGINT')));
    assert.ok(plugin.running, 'a plugin ignores SIGINT');

    await plugin.shutdown();
    const exit = await plugin.exited;
    assert.deepEqual(exit, { code: 0, signal: null }, 'the plugin exited on its own after GRPCController.Shutdown');
    await plugin.shutdown(); // safe twice
  });

  it('kills a plugin that does not stop after Shutdown', async () => {
    const plugin = await launchPlugin({ path: file, handshake: NOMAD_HANDSHAKE, startTimeoutMs: FIXTURE_START_MS, env: { FIXTURE_MODE: 'hang' } });
    await plugin.shutdown({ graceMs: 200 });
    assert.equal((await plugin.exited).signal, 'SIGKILL');
  });
});

describe('serving a plugin (plugin side)', () => {
  it('refuses to run without the host\'s magic cookie, with go-plugin\'s message', async () => {
    await assert.rejects(servePlugin({ handshake: NOMAD_HANDSHAKE, register: () => {}, env: {} }), (err: unknown) => {
      assert.ok(err instanceof GoPluginError);
      assert.equal(err.code, 'GOPLUGIN_NOT_A_PLUGIN');
      assert.match(err.message, /^This binary is a plugin\. These are not meant to be executed directly\./);
      return true;
    });
  });

  it('prints the handshake line for the version both sides speak, and removes its socket when stopped', async () => {
    const lines: string[] = [];
    const env = { ...handshakeEnv({ ...NOMAD_HANDSHAKE, appVersions: [1, 2, 3] }) };
    const server = await servePlugin({ handshake: NOMAD_HANDSHAKE, register: () => {}, env, ignoreSigint: false, writeHandshake: (l) => lines.push(l) });
    assert.deepEqual(lines, [`1|2|unix|${server.socketPath}|grpc|`]);
    assert.deepEqual(checkHandshake('self', lines[0] as string, NOMAD_HANDSHAKE), { coreVersion: 1, appVersion: 2, network: 'unix', address: server.socketPath, protocol: 'grpc' });
    assert.ok(existsSync(server.socketPath));
    await server.stop();
    await server.stop();
    await server.stopped;
    assert.ok(!existsSync(path.dirname(server.socketPath)));
  });
});
