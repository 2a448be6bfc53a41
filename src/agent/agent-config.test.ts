import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { SpecFileError } from '../spec-files/index.js';
import { AgentConfigError, loadAgentConfig, parseAgentConfig } from './agent-config.js';

const dir = mkdtempSync(path.join(tmpdir(), 'berth-agent-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const HCL = `# a client agent
data_dir  = "state"
bind_addr = "0.0.0.0"
log_level = "debug"

ports {
  http = 4747
}

tokens {
  management      = ["mgmt-secret-0001"]
  read_only_file  = "ro.tokens"
}

client {
  node_name      = "node-7"
  datacenter     = "dc2"
  server_address = "http://10.0.0.5:4646"
  token          = "node-secret-0001"
  host_volume "scratch" {
    path = "/srv/scratch"
  }
  file_roots = ["/srv/releases"]
  options = {
    "driver.raw_exec.enable" = true
    "driver.exec.enable"     = "false"
  }
}

csi {
  probe_interval = "5s"
  health_timeout = "1m"
}
`;

const JSON_CONFIG = JSON.stringify(
  {
    data_dir: 'state',
    bind_addr: '0.0.0.0',
    log_level: 'debug',
    ports: { http: 4747 },
    tokens: { management: ['mgmt-secret-0001'], read_only_file: 'ro.tokens' },
    client: {
      node_name: 'node-7',
      datacenter: 'dc2',
      server_address: 'http://10.0.0.5:4646',
      token: 'node-secret-0001',
      host_volume: { scratch: { path: '/srv/scratch' } },
      file_roots: ['/srv/releases'],
      options: { 'driver.raw_exec.enable': true, 'driver.exec.enable': 'false' },
    },
    csi: { probe_interval: '5s', health_timeout: '1m' },
  },
  null,
  2,
);

async function problemOf(file: string, text: string): Promise<string> {
  try {
    await parseAgentConfig(file, text);
  } catch (err) {
    assert.ok(err instanceof SpecFileError, String(err));
    return err.message;
  }
  assert.fail('the config was accepted');
}

describe('agent config files', () => {
  writeFileSync(path.join(dir, 'ro.tokens'), '# readers\nro-secret-0001\n\nro-secret-0002\n');
  const expected = {
    dataDir: path.join(dir, 'state'),
    bindAddr: '0.0.0.0',
    httpPort: 4747,
    logLevel: 'debug',
    tokens: { management: ['mgmt-secret-0001'], readOnly: ['ro-secret-0001', 'ro-secret-0002'], node: [] },
    server: {},
    client: {
      nodeName: 'node-7',
      datacenter: 'dc2',
      serverAddress: 'http://10.0.0.5:4646',
      token: 'node-secret-0001',
      hostVolumes: { scratch: '/srv/scratch' },
      fileRoots: ['/srv/releases'],
      drivers: { raw_exec: true, exec: false },
    },
    csi: { probeIntervalMs: 5_000, healthTimeoutMs: 60_000 },
  };

  it('reads HCL as Nomad agent configs are written; paths resolve against the file, token files are read', async () => {
    writeFileSync(path.join(dir, 'client.hcl'), HCL);
    assert.deepEqual(await loadAgentConfig(path.join(dir, 'client.hcl')), expected);
  });

  it('reads the same config as JSON with the same names', async () => {
    writeFileSync(path.join(dir, 'client.json'), JSON_CONFIG);
    assert.deepEqual(await loadAgentConfig(path.join(dir, 'client.json')), expected);
  });

  it('names file:line:col and the field of an unknown field, a wrong type and a bad duration in HCL', async () => {
    const text = 'data_dir = "/x"\nclient {\n  node_nme = "a"\n}\nports {\n  http = "high"\n}\ncsi {\n  probe_interval = "often"\n}\n';
    const message = await problemOf('agent.hcl', text);
    assert.match(message, /^agent\.hcl:3:3: client: unsupported argument "node_nme" \(did you mean "node_name"\?\)$/m);
    assert.match(message, /^agent\.hcl:6:3: ports\.http: expected a number$/m);
    assert.match(message, /^agent\.hcl:9:3: csi\.probe_interval: must be a duration/m);
  });

  it('names file:line:col of malformed HCL and malformed JSON', async () => {
    assert.match(await problemOf('agent.hcl', 'client {\n  node_name = \n}\n'), /^agent\.hcl:2:\d+: malformed HCL: Invalid expression: Expected the start of an expression, but found a newline\.$/);
    assert.match(await problemOf('agent.json', '{\n  "data_dir": "/x",\n  "client": {,}\n}\n'), /^agent\.json:3:\d+: malformed JSON/);
  });

  it('names file:line:col of JSON problems with the names the file uses', async () => {
    const text = '{\n  "data_dir": "/x",\n  "client": {\n    "host_volume": { "s": { "path": "relative" } },\n    "tokn": "x"\n  }\n}\n';
    const message = await problemOf('agent.json', text);
    assert.match(message, /^agent\.json:4:\d+: client\.host_volume\.s\.path: must be an absolute path$/m);
    assert.match(message, /^agent\.json:5:5: client: unknown field "tokn"$/m);
  });

  it('never quotes a token in an error', async () => {
    const message = await problemOf('agent.hcl', 'tokens {\n  management = ["sh0rt"]\n}\n');
    assert.match(message, /^agent\.hcl:2:\d+: tokens\.management\[0\]: a token has at least 8 characters$/);
    assert.doesNotMatch(message, /sh0rt/);
  });

  it('reads the client garbage collection limits and the fencing window (HCL and JSON alike)', async () => {
    const hcl = 'client {\n  gc_interval = "30s"\n  gc_max_age = "2h"\n  gc_max_allocs = 10\n  gc_disk_usage_threshold = 90\n  stop_after_server_disconnect = "45s"\n}\n';
    const want = { gc: { intervalMs: 30_000, maxAgeMs: 7_200_000, maxAllocs: 10, diskUsageThreshold: 90 }, stopAfterServerDisconnectMs: 45_000 };
    assert.deepEqual((await parseAgentConfig('a.hcl', hcl)).client, { hostVolumes: {}, drivers: {}, ...want });
    const json = { client: { gc_interval: '30s', gc_max_age: '2h', gc_max_allocs: 10, gc_disk_usage_threshold: 90, stop_after_server_disconnect: '45s' } };
    assert.deepEqual((await parseAgentConfig('a.json', JSON.stringify(json))).client, { hostVolumes: {}, drivers: {}, ...want });
    assert.match(await problemOf('a.hcl', 'client {\n  gc_disk_usage_threshold = 120\n}\n'), /^a\.hcl:2:3: client\.gc_disk_usage_threshold: must be at most 100$/);
  });

  it("reads the client's artifact block (Nomad's defaults for what it leaves out) and names a bad size at its line", async () => {
    const hcl = 'client {\n  artifact {\n    http_read_timeout = "5m"\n    http_max_size = "1GiB"\n    decompression_file_count_limit = 100\n  }\n}\n';
    const want = { httpReadTimeoutMs: 300_000, httpMaxBytes: 2 ** 30, gitTimeoutMs: 1_800_000, decompressionSizeLimit: 100e9, decompressionFileCountLimit: 100 };
    assert.deepEqual((await parseAgentConfig('a.hcl', hcl)).client.artifact, want);
    const json = { client: { artifact: { http_read_timeout: '5m', http_max_size: '1GiB', decompression_file_count_limit: 100 } } };
    assert.deepEqual((await parseAgentConfig('a.json', JSON.stringify(json))).client.artifact, want);
    assert.match(await problemOf('a.hcl', 'client {\n  artifact {\n    decompression_size_limit = "lots"\n  }\n}\n'), /^a\.hcl:3:5: client\.artifact\.decompression_size_limit: must be a size such as "100GB", "512MiB" or "4096"$/);
    assert.match(await problemOf('a.hcl', 'client {\n  artifact {\n    git_timeout = "0s"\n  }\n}\n'), /^a\.hcl:3:5: client\.artifact\.git_timeout: git_timeout must be > 0$/);
  });

  it('reads the executor settings (HCL and JSON alike) and names a spare_executor that is not a bool at its line', async () => {
    const want = { hostVolumes: {}, drivers: {}, tasksPerExecutor: 8, spareExecutor: false };
    assert.deepEqual((await parseAgentConfig('a.hcl', 'client {\n  tasks_per_executor = 8\n  spare_executor = false\n}\n')).client, want);
    assert.deepEqual((await parseAgentConfig('a.json', JSON.stringify({ client: { tasks_per_executor: 8, spare_executor: false } }))).client, want);
    assert.match(await problemOf('a.hcl', 'client {\n  spare_executor = "no"\n}\n'), /^a\.hcl:2:3: client\.spare_executor: expected true or false$/);
  });

  it('reads the etcd store block with its write timeout (HCL and JSON alike), and names a bad one at its line', async () => {
    const hcl = 'server {\n  store {\n    etcd {\n      endpoints = ["http://127.0.0.1:2379"]\n      prefix = "/b"\n      write_timeout = "1500ms"\n    }\n  }\n}\n';
    const want = { endpoints: ['http://127.0.0.1:2379'], prefix: '/b', writeTimeoutMs: 1_500 };
    assert.deepEqual((await parseAgentConfig('a.hcl', hcl)).server.etcd, want);
    const json = { server: { store: { etcd: { endpoints: ['http://127.0.0.1:2379'], prefix: '/b', write_timeout: '1500ms' } } } };
    assert.deepEqual((await parseAgentConfig('a.json', JSON.stringify(json))).server.etcd, want);
    assert.deepEqual((await parseAgentConfig('a.hcl', 'server {\n  store {\n    etcd {\n      endpoints = ["http://127.0.0.1:2379"]\n    }\n  }\n}\n')).server.etcd, { endpoints: ['http://127.0.0.1:2379'] });
    assert.match(
      await problemOf('a.hcl', 'server {\n  store {\n    etcd {\n      endpoints = ["http://127.0.0.1:2379"]\n      write_timeout = 5\n    }\n  }\n}\n'),
      /^a\.hcl:5:7: server\.store\.etcd\.write_timeout: expected a string$/,
    );
  });

  it('reads api_workers (HCL and JSON alike) and names a bad value at its line', async () => {
    assert.equal((await parseAgentConfig('a.hcl', 'server {\n  api_workers = 3\n}\n')).server.apiWorkers, 3);
    assert.equal((await parseAgentConfig('a.json', JSON.stringify({ server: { api_workers: 0 } }))).server.apiWorkers, 0);
    assert.equal((await parseAgentConfig('a.hcl', 'server {}\n')).server.apiWorkers, undefined);
    assert.match(await problemOf('a.hcl', 'server {\n  api_workers = -1\n}\n'), /^a\.hcl:2:3: server\.api_workers: must be 0 or more \(0: the main thread serves the API alone\)$/);
    assert.match(await problemOf('a.hcl', 'server {\n  api_workers = 1.5\n}\n'), /^a\.hcl:2:3: server\.api_workers: expected a whole number$/);
    assert.match(await problemOf('a.hcl', 'server {\n\n  api_workers = "four"\n}\n'), /^a\.hcl:3:3: server\.api_workers: expected a number$/);
    assert.match(await problemOf('a.hcl', 'server {\n  api_workers = 100\n}\n'), /^a\.hcl:2:3: server\.api_workers: must be at most 64$/);
  });

  it('reads api_readers (HCL and JSON alike) and names a bad value at its line', async () => {
    assert.equal((await parseAgentConfig('a.hcl', 'server {\n  api_readers = 2\n}\n')).server.apiReaders, 2);
    assert.equal((await parseAgentConfig('a.json', JSON.stringify({ server: { api_readers: 0 } }))).server.apiReaders, 0);
    assert.equal((await parseAgentConfig('a.hcl', 'server {}\n')).server.apiReaders, undefined);
    assert.match(await problemOf('a.hcl', 'server {\n  api_readers = -1\n}\n'), /^a\.hcl:2:3: server\.api_readers: must be 0 or more \(0: the main thread reads every registration\)$/);
    assert.match(await problemOf('a.hcl', 'server {\n\n  api_readers = "one"\n}\n'), /^a\.hcl:3:3: server\.api_readers: expected a number$/);
  });

  it('reads max_heartbeats_per_second (Nomad\'s), and names a rate that is not above 0 at its line', async () => {
    assert.equal((await parseAgentConfig('a.hcl', 'server {\n  max_heartbeats_per_second = 50\n}\n')).server.maxHeartbeatsPerSecond, 50);
    assert.equal((await parseAgentConfig('a.json', JSON.stringify({ server: { max_heartbeats_per_second: 12.5 } }))).server.maxHeartbeatsPerSecond, 12.5);
    assert.equal((await parseAgentConfig('a.hcl', 'server {\n  heartbeat_ttl = "30s"\n}\n')).server.maxHeartbeatsPerSecond, undefined);
    assert.match(await problemOf('a.hcl', 'server {\n  max_heartbeats_per_second = 0\n}\n'), /^a\.hcl:2:3: server\.max_heartbeats_per_second: must be a number of heartbeats a second above 0, e\.g\. 100$/);
  });

  it('reads heartbeat_grace (Nomad\'s), "0s" included, and names one that is not a duration at its line', async () => {
    assert.equal((await parseAgentConfig('a.hcl', 'server {\n  heartbeat_grace = "15s"\n}\n')).server.heartbeatGraceMs, 15_000);
    assert.equal((await parseAgentConfig('a.json', JSON.stringify({ server: { heartbeat_grace: '0s' } }))).server.heartbeatGraceMs, 0);
    assert.equal((await parseAgentConfig('a.hcl', 'server {\n  heartbeat_ttl = "30s"\n}\n')).server.heartbeatGraceMs, undefined);
    assert.match(await problemOf('a.hcl', 'server {\n\n  heartbeat_grace = "soon"\n}\n'), /^a\.hcl:3:3: server\.heartbeat_grace: must be a duration such as "500ms", "30s" or "5m"$/);
  });

  it('refuses an unknown client option and a token file that cannot be read', async () => {
    assert.match(await problemOf('agent.hcl', 'client {\n  options = {\n    "driver.java.enable" = true\n  }\n}\n'), /client\.options\.driver\.java\.enable: unknown option/);
    await assert.rejects(parseAgentConfig(path.join(dir, 'x.hcl'), 'tokens {\n  node_file = "missing.tokens"\n}\n'), (err: unknown) => {
      assert.ok(err instanceof AgentConfigError);
      assert.equal(err.code, 'CONFIG_UNREADABLE');
      assert.match(err.message, /tokens\.node_file: cannot read missing\.tokens: ENOENT/);
      return true;
    });
  });
});

describe('driver plugin settings in the agent config', () => {
  const PLUGINS_HCL = `plugin_dir = "plugins"

plugin "my-driver" {
  args = ["--verbose"]
  config {
    enabled = true
    volumes {
      enabled = false
    }
  }
}

client {
  options = {
    "driver.raw_exec.mode" = "external"
  }
}
`;

  it('reads plugin_dir, plugin blocks (config kept as the plugin will decode it) and the built-in drivers mode', async () => {
    const cfg = await parseAgentConfig(path.join(dir, 'plugins.hcl'), PLUGINS_HCL);
    assert.equal(cfg.pluginDir, path.join(dir, 'plugins'));
    assert.deepEqual(cfg.plugins?.['my-driver']?.args, ['--verbose']);
    assert.equal(cfg.plugins?.['my-driver']?.config?.['enabled'], true);
    assert.ok(cfg.plugins?.['my-driver']?.config?.['volumes'], 'nested blocks are kept');
    assert.deepEqual(cfg.client.driverModes, { raw_exec: 'external' });
    // Problems found once the plugin runs are reported at their line.
    assert.equal(cfg.locatePlugin?.('my-driver', 'config.enabled'), `${path.join(dir, 'plugins.hcl')}:6:5`);
  });

  it('reads the same settings from JSON', async () => {
    const json = JSON.stringify({ plugin_dir: '/opt/plugins', plugin: { 'my-driver': { config: { no_cgroups: true } } } });
    const cfg = await parseAgentConfig('agent.json', json);
    assert.equal(cfg.pluginDir, '/opt/plugins');
    assert.deepEqual(cfg.plugins?.['my-driver']?.config, { no_cgroups: true });
  });

  it('reads the group network settings: bridge name and subnet, cni_path as a list, cni_config_dir; refuses a bad subnet at its line', async () => {
    const hcl = 'client {\n  bridge_network_name = "br-web"\n  bridge_network_subnet = "10.9.0.0/16"\n  cni_path = "/opt/cni/bin:/usr/lib/cni"\n  cni_config_dir = "/etc/cni/net.d"\n}\n';
    assert.deepEqual((await parseAgentConfig('a.hcl', hcl)).client.groupNetworks, {
      bridge: { name: 'br-web', subnet: '10.9.0.0/16' },
      cniPath: ['/opt/cni/bin', '/usr/lib/cni'],
      cniConfigDir: '/etc/cni/net.d',
    });
    assert.match(await problemOf('a.hcl', 'client {\n  bridge_network_subnet = "10.9.0.0"\n}\n'), /^a\.hcl:2:3: client\.bridge_network_subnet: must be an IPv4 CIDR between \/8 and \/30/);
    assert.match(await problemOf('a.hcl', 'client {\n  bridge_network_name = "a-bridge-name-too-long"\n}\n'), /client\.bridge_network_name: must be a Linux interface name/);
  });

  it('refuses an unknown driver mode', async () => {
    await assert.rejects(parseAgentConfig('a.hcl', 'client {\n  options = {\n    "driver.exec.mode" = "sideways"\n  }\n}\n'), /driver\.exec\.mode: must be one of "in-process", "external"/);
  });
});
