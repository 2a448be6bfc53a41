// The CSI client and hostpath plugin figures (section `csi` of `npm run bench`).
//
// 1. Probe and NodePublishVolume round trips through Berth's CsiClient against
//    a bare grpc-js client with the same generated messages, on the same fake
//    plugin, interleaved in blocks so that all see the same machine state.
//    Berth's overhead is the ratio of the p50s (target <= 1.15). Berth sends
//    every call with a gRPC deadline (docs/csi-rules.md, Errors: every RPC carries one), so
//    the bare client is measured both without and with the same deadline.
// 2. A full create/stage/publish/unpublish/unstage/delete cycle on the
//    hostpath plugin with real bind mounts, p50/p99 per step and in all.

import * as grpc from '@grpc/grpc-js';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CsiClient, RPC_POLICIES, VolumeCapability } from '../src/csi/index.js';
import { FakePlugin } from '../test/support/csi-fake/index.js';
import {
  IdentityDefinition,
  NodeDefinition,
  NodePublishVolumeRequest,
  ProbeRequest,
  VolumeCapability_AccessMode_Mode,
} from '../src/gen/csi/v1/csi.js';
import { HostpathPlugin } from '../src/csi-plugins/index.js';
import { round, summarize, timeNs, type Summary } from './_stats.js';

export const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 20);
const BLOCK = Number(process.env['BENCH_BLOCK'] ?? 200);
const CYCLES = Number(process.env['BENCH_CYCLES'] ?? 200);

/** A bare grpc-js client: the baseline Berth's client is measured against. */
class BareClient {
  readonly #client: grpc.Client;
  constructor(endpoint: string) {
    this.#client = new grpc.Client(endpoint, grpc.credentials.createInsecure());
  }
  unary<Req, Res>(
    path: string,
    type: { encode(m: Req): { finish(): Uint8Array } },
    resType: { decode(b: Uint8Array): Res },
    req: Req,
    deadlineMs?: number,
  ): Promise<Res> {
    const serialize = (m: Req): Buffer => Buffer.from(type.encode(m).finish());
    const deserialize = (b: Buffer): Res => resType.decode(b);
    return new Promise((resolve, reject) => {
      const done = (err: grpc.ServiceError | null, res?: Res): void => (err ? reject(err) : resolve(res as Res));
      if (deadlineMs === undefined) this.#client.makeUnaryRequest(path, serialize, deserialize, req, done);
      else this.#client.makeUnaryRequest(path, serialize, deserialize, req, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, done);
    });
  }
  close(): void {
    this.#client.close();
  }
}

type Contenders = Record<'berth' | 'bare' | 'bareWithDeadline', () => Promise<unknown>>;

async function compare(name: string, fns: Contenders, betweenRounds: () => void): Promise<Record<string, unknown>> {
  const entries = Object.entries(fns) as Array<[keyof Contenders, () => Promise<unknown>]>;
  for (let i = 0; i < 300; i++) for (const [, fn] of entries) await fn();
  const samples = { berth: [] as bigint[], bare: [] as bigint[], bareWithDeadline: [] as bigint[] };
  for (let r = 0; r < ROUNDS; r++) {
    // Rotate which goes first so none gets a systematic head start.
    for (let k = 0; k < entries.length; k++) {
      const [key, fn] = entries[(r + k) % entries.length]!;
      for (let i = 0; i < BLOCK; i++) samples[key].push(await timeNs(fn));
    }
    betweenRounds();
  }
  const berth = summarize(samples.berth);
  const bare = summarize(samples.bare);
  const bareWithDeadline = summarize(samples.bareWithDeadline);
  const ratio = round(berth.p50Us / bare.p50Us, 3);
  const ratioSameDeadline = round(berth.p50Us / bareWithDeadline.p50Us, 3);
  console.log(
    `${name.padEnd(18)} berth p50 ${berth.p50Us} us p99 ${berth.p99Us} us | bare grpc-js p50 ${bare.p50Us} us p99 ${bare.p99Us} us | ` +
      `bare + deadline p50 ${bareWithDeadline.p50Us} us | ratio p50 ${ratio} (vs bare + same deadline ${ratioSameDeadline})`,
  );
  return { berth, bareGrpcJs: bare, bareGrpcJsWithDeadline: bareWithDeadline, overheadRatioP50: ratio, overheadRatioP50SameDeadline: ratioSameDeadline };
}

async function overhead(dir: string): Promise<Record<string, unknown>> {
  const fake = new FakePlugin({ socketPath: join(dir, 'fake.sock') });
  await fake.start();
  const berth = new CsiClient({ endpoint: fake.endpoint });
  const bare = new BareClient(fake.endpoint);
  const cap = VolumeCapability.mount('single-node-writer', { fsType: 'ext4' });
  const probePath = `/${IdentityDefinition.fullName}/${IdentityDefinition.methods.probe.name}`;
  const publishPath = `/${NodeDefinition.fullName}/${NodeDefinition.methods.nodePublishVolume.name}`;
  const publishReq = NodePublishVolumeRequest.fromPartial({
    volumeId: 'bench-vol',
    stagingTargetPath: '/staging/bench-vol',
    targetPath: '/target/bench-vol',
    volumeCapability: { mount: { fsType: 'ext4' }, accessMode: { mode: VolumeCapability_AccessMode_Mode.SINGLE_NODE_WRITER } },
  });
  try {
    const probeRes = IdentityDefinition.methods.probe.responseType;
    const probe = await compare(
      'Probe',
      {
        berth: () => berth.probe(),
        bare: () => bare.unary(probePath, ProbeRequest, probeRes, ProbeRequest.fromPartial({})),
        bareWithDeadline: () => bare.unary(probePath, ProbeRequest, probeRes, ProbeRequest.fromPartial({}), RPC_POLICIES.Probe.deadlineMs),
      },
      () => fake.clearCalls(),
    );
    // The fake, like a real plugin, publishes only what was staged first.
    await berth.nodeStageVolume({ volumeId: 'bench-vol', stagingTargetPath: '/staging/bench-vol', volumeCapability: cap });
    const publishRes = NodeDefinition.methods.nodePublishVolume.responseType;
    const publish = await compare(
      'NodePublishVolume',
      {
        berth: () =>
          berth.nodePublishVolume({ volumeId: 'bench-vol', stagingTargetPath: '/staging/bench-vol', targetPath: '/target/bench-vol', volumeCapability: cap, readonly: false }),
        bare: () => bare.unary(publishPath, NodePublishVolumeRequest, publishRes, publishReq),
        bareWithDeadline: () => bare.unary(publishPath, NodePublishVolumeRequest, publishRes, publishReq, RPC_POLICIES.NodePublishVolume.deadlineMs),
      },
      () => fake.clearCalls(),
    );
    return { probe, nodePublishVolume: publish };
  } finally {
    bare.close();
    await berth.close();
    await fake.stop();
  }
}

async function hostpathCycle(dir: string): Promise<Record<string, unknown>> {
  const plugin = new HostpathPlugin({ endpoint: `unix://${join(dir, 'hp.sock')}`, nodeId: 'bench-node', dataDir: join(dir, 'data') });
  await plugin.start();
  const client = new CsiClient({ endpoint: plugin.endpoint });
  const cap = VolumeCapability.mount('single-node-writer');
  const steps = ['create', 'stage', 'publish', 'unpublish', 'unstage', 'delete', 'cycle'] as const;
  const samples = Object.fromEntries(steps.map((s) => [s, [] as bigint[]])) as Record<(typeof steps)[number], bigint[]>;
  try {
    for (let i = 0; i < CYCLES; i++) {
      const staging = join(dir, 'staging', String(i));
      const target = join(dir, 'pods', String(i), 'mount');
      mkdirSync(staging, { recursive: true });
      mkdirSync(join(dir, 'pods', String(i)), { recursive: true });
      const start = process.hrtime.bigint();
      let volumeId = '';
      samples.create.push(await timeNs(async () => (volumeId = (await client.createVolume({ name: `bench-${i}`, volumeCapabilities: [cap], capacityRange: { requiredBytes: 1 << 20 } })).volumeId)));
      samples.stage.push(await timeNs(() => client.nodeStageVolume({ volumeId, stagingTargetPath: staging, volumeCapability: cap })));
      samples.publish.push(await timeNs(() => client.nodePublishVolume({ volumeId, stagingTargetPath: staging, targetPath: target, volumeCapability: cap, readonly: false })));
      samples.unpublish.push(await timeNs(() => client.nodeUnpublishVolume(volumeId, target)));
      samples.unstage.push(await timeNs(() => client.nodeUnstageVolume(volumeId, staging)));
      samples.delete.push(await timeNs(() => client.deleteVolume(volumeId)));
      samples.cycle.push(process.hrtime.bigint() - start);
    }
  } finally {
    await client.close();
    await plugin.stop();
  }
  const out: Record<string, Summary> = {};
  for (const step of steps) {
    out[step] = summarize(samples[step]);
    const s = out[step];
    console.log(`hostpath ${step.padEnd(10)} p50 ${(s.p50Us / 1000).toFixed(2)} ms  p99 ${(s.p99Us / 1000).toFixed(2)} ms  (n=${s.n})`);
  }
  return out;
}

/** Runs the CSI section in `dir` (a fresh temporary directory). */
export default async function csiBench(dir: string): Promise<Record<string, unknown>> {
  console.log(`CSI client (${ROUNDS}x${BLOCK} calls per client) and ${CYCLES} hostpath cycles`);
  const clientOverhead = await overhead(dir);
  const cycle = await hostpathCycle(dir);
  return { clientOverhead, hostpathCycle: cycle };
}
