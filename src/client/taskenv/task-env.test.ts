import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TaskEnvBuilder, taskEnvDirs } from './index.js';

const ALLOC_ID = '5b1f0c6e-1111-2222-3333-444455556666';

function builder(over: { taskEnv?: Record<string, string>; fs?: 'none' | 'chroot' | 'image' } = {}): TaskEnvBuilder {
  const td = { sharedDir: '/srv/a/x/alloc', localDir: '/srv/a/x/web/local', secretsDir: '/srv/a/x/web/secrets' };
  return new TaskEnvBuilder({
    alloc: { id: ALLOC_ID, jobId: 'shop', taskGroup: 'front', index: 2, namespace: 'default' },
    job: { id: 'shop', name: 'Shop', meta: { owner: 'ops', tier: 'job' } },
    group: { name: 'front', meta: { tier: 'group' } },
    task: { name: 'web', env: over.taskEnv ?? {}, meta: { 'build-id': '42' }, resources: { cpuMhz: 250, memoryMb: 128, memoryMaxMb: 256 } },
    node: { id: 'node-1', name: 'box', datacenter: 'eu1', nodeClass: 'fast', attributes: { 'kernel.name': 'linux' }, meta: { rack: 'r7' } },
    ...taskEnvDirs(td, over.fs ?? 'none'),
  });
}

describe('TaskEnv: the environment a task sees', () => {
  it('sets Nomad\'s variables and Berth\'s, with meta merged job < group < task and an upper-cased twin', () => {
    const env = builder().build().env;
    assert.equal(env['NOMAD_ALLOC_ID'], ALLOC_ID);
    assert.equal(env['NOMAD_SHORT_ALLOC_ID'], '5b1f0c6e');
    assert.equal(env['NOMAD_ALLOC_NAME'], 'shop.front[2]');
    assert.equal(env['NOMAD_ALLOC_INDEX'], '2');
    assert.equal(env['NOMAD_JOB_NAME'], 'Shop');
    assert.equal(env['NOMAD_DC'], 'eu1');
    assert.equal(env['NOMAD_REGION'], 'global');
    assert.equal(env['NOMAD_CPU_LIMIT'], '250');
    assert.equal(env['NOMAD_MEMORY_LIMIT'], '128');
    assert.equal(env['NOMAD_MEMORY_MAX_LIMIT'], '256');
    assert.equal(env['NOMAD_ALLOC_DIR'], '/srv/a/x/alloc');
    assert.equal(env['BERTH_TASK_DIR'], '/srv/a/x/web/local');
    assert.equal(env['NOMAD_META_owner'], 'ops');
    assert.equal(env['NOMAD_META_OWNER'], 'ops');
    assert.equal(env['NOMAD_META_tier'], 'group');
    assert.equal(env['NOMAD_META_build_id'], '42', 'a meta key is cleaned to what a shell accepts');
    assert.equal(env['NOMAD_META_BUILD_ID'], '42');
  });

  it('gives a chrooted task the paths it sees, and the agent the host paths', () => {
    const env = builder({ fs: 'chroot' }).build();
    assert.equal(env.env['NOMAD_ALLOC_DIR'], '/alloc');
    assert.equal(env.env['NOMAD_SECRETS_DIR'], '/secrets');
    assert.deepEqual(env.clientPath('${NOMAD_ALLOC_DIR}/conf/app.ini'), { path: '/srv/a/x/alloc/conf/app.ini', escapes: false });
    assert.deepEqual(env.clientPath('local/app.ini'), { path: '/srv/a/x/web/local/app.ini', escapes: false });
    assert.equal(env.clientPath('../../../etc/passwd').escapes, true);
    assert.deepEqual(env.clientPath('/local/app.ini'), { path: '/srv/a/x/web/local/app.ini', escapes: false }, 'a path as the task sees it is taken under its directory');
    assert.deepEqual(env.clientPath('/etc/app.ini', false), { path: '/etc/app.ini', escapes: true });
  });

  it('gives a task of an image driver (a container) /alloc, /local and /secrets, and templates the host paths', () => {
    const env = builder({ fs: 'image', taskEnv: { CONF: '${NOMAD_TASK_DIR}/app.ini' } }).build();
    assert.equal(env.env['NOMAD_ALLOC_DIR'], '/alloc');
    assert.equal(env.env['NOMAD_TASK_DIR'], '/local');
    assert.equal(env.env['NOMAD_SECRETS_DIR'], '/secrets');
    assert.equal(env.env['CONF'], '/local/app.ini');
    assert.equal(env.env['PATH'], undefined, 'no PATH of the host: the image\'s own applies');
    assert.deepEqual(env.clientPath('${NOMAD_TASK_DIR}/app.ini'), { path: '/srv/a/x/web/local/app.ini', escapes: false }, 'a template renders to the host path');
  });

  it('interpolates the task\'s env against the rest, lets it override NOMAD_* but never BERTH_*', () => {
    const env = builder({ taskEnv: { DATA: '${NOMAD_ALLOC_DIR}/data', NOMAD_DC: 'mine', BERTH_JOB_ID: 'mine', WHERE: '${node.unique.name}' } }).build().env;
    assert.equal(env['DATA'], '/srv/a/x/alloc/data');
    assert.equal(env['NOMAD_DC'], 'mine');
    assert.equal(env['BERTH_JOB_ID'], 'shop');
    assert.equal(env['WHERE'], 'box');
  });

  it('expands node values, attributes, meta, env["X"] and hook variables; leaves unknown references as written and lists them', () => {
    const env = builder().build({ CSI_ENDPOINT: 'unix:///csi/csi.sock' });
    const text = '--endpoint=${CSI_ENDPOINT} --nodeid=${node.unique.id} ${node.datacenter}/${node.region}/${node.class} ${attr.kernel.name} ${meta.rack} ${env["NOMAD_TASK_NAME"]}';
    assert.equal(env.interpolate(text), '--endpoint=unix:///csi/csi.sock --nodeid=node-1 eu1/global/fast linux r7 web');
    assert.equal(env.interpolate('${var.port} ${NOMAD_PORT_http} $${x} ${HOME:-/root}'), '${var.port} ${NOMAD_PORT_http} $${x} ${HOME:-/root}');
    assert.deepEqual(env.unresolved({ args: ['${var.port}', '${NOMAD_ALLOC_ID}'], x: { y: '${var.port} ${attr.nope}' } }), ['${var.port}', '${attr.nope}']);
    assert.deepEqual(env.interpolateAll({ command: '${NOMAD_TASK_DIR}/run', args: ['${NOMAD_ALLOC_INDEX}', 3], n: { '${k}': '${NOMAD_JOB_ID}' } }), {
      command: '/srv/a/x/web/local/run',
      args: ['2', 3],
      n: { '${k}': 'shop' },
    });
  });

  it('gives each allocated port its NOMAD_* and BERTH_* variables, as Nomad does, in env and in ${...}', () => {
    const td = { sharedDir: '/a/alloc', localDir: '/a/web/local', secretsDir: '/a/web/secrets' };
    const make = (network?: { address?: string; interface?: string }): TaskEnvBuilder =>
      new TaskEnvBuilder({
        alloc: {
          id: ALLOC_ID,
          jobId: 'shop',
          taskGroup: 'front',
          ports: [
            { label: 'http', value: 23456, to: 23456, hostIp: '10.0.0.5' },
            { label: 'db-admin', value: 8080, to: 80, hostIp: 'fd00::5' },
          ],
        },
        ...(network ? { network: () => network } : {}),
        job: { id: 'shop' },
        group: { name: 'front' },
        task: { name: 'web', env: { LISTEN: ':${NOMAD_PORT_http}' }, resources: { cpuMhz: 100, memoryMb: 64 } },
        node: { id: 'n', name: 'n', datacenter: 'dc1', attributes: {}, meta: {} },
        ...taskEnvDirs(td, 'none'),
      });
    const host = make().build();
    assert.equal(host.env['NOMAD_PORT_http'], '23456');
    assert.equal(host.env['NOMAD_HOST_PORT_http'], '23456');
    assert.equal(host.env['NOMAD_ALLOC_PORT_http'], '23456');
    assert.equal(host.env['NOMAD_IP_http'], '10.0.0.5');
    assert.equal(host.env['NOMAD_HOST_IP_http'], '10.0.0.5');
    assert.equal(host.env['NOMAD_ADDR_http'], '10.0.0.5:23456');
    assert.equal(host.env['NOMAD_HOST_ADDR_http'], '10.0.0.5:23456');
    assert.equal(host.env['NOMAD_ALLOC_IP_http'], '10.0.0.5', 'in host mode the allocation shares the host address');
    assert.equal(host.env['NOMAD_ALLOC_INTERFACE_http'], undefined);
    assert.equal(host.env['BERTH_PORT_http'], '23456');
    assert.equal(host.env['BERTH_ADDR_http'], '10.0.0.5:23456');
    assert.equal(host.env['LISTEN'], ':23456', 'the task env interpolates ports');
    assert.equal(host.interpolate('${NOMAD_ADDR_http}/x'), '10.0.0.5:23456/x');
    // A mapped port: listen on `to`, reached on the host port; an IPv6 host IP in brackets; the label cleaned.
    assert.equal(host.env['NOMAD_PORT_db_admin'], '80');
    assert.equal(host.env['NOMAD_HOST_PORT_db_admin'], '8080');
    assert.equal(host.env['NOMAD_ADDR_db_admin'], '[fd00::5]:8080');
    // With its own network (bridge), the allocation's address and interface.
    const bridged = make({ address: '172.26.64.7', interface: 'eth0' }).build();
    assert.equal(bridged.env['NOMAD_ALLOC_IP_db_admin'], '172.26.64.7');
    assert.equal(bridged.env['NOMAD_ALLOC_ADDR_db_admin'], '172.26.64.7:80');
    assert.equal(bridged.env['NOMAD_ALLOC_INTERFACE_db_admin'], 'eth0');
    assert.equal(bridged.env['NOMAD_IP_db_admin'], 'fd00::5', 'NOMAD_IP stays the host IP, as in Nomad');
    assert.equal(bridged.env['BERTH_ALLOC_IP_db_admin'], '172.26.64.7');
  });
});
