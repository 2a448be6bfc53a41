// The writer's shapes (nomad-job-shapes.ts) are src/api's zod schemas as
// data: every field of each Nomad object a table writes, in the schema's
// order, with the zero value Go writes for it, and the nested objects the
// tables descend into. These tests make the shapes again from the schemas
// (the walk the writer used to do for every answer) and hold the file to
// them byte for byte, and hold the writer's answers to what the schema walk
// wrote, so that a field added to a schema in src/api fails here until the
// shapes are made again:
//
//   BERTH_WRITE_SHAPES=1 node --import tsx --test src/structs/nomad-job-shapes.test.ts

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { z } from 'zod';
import * as api from '../api/index.js';
import { parseJobFile } from '../spec-files/index.js';
import type { JobSpec } from './job.js';
import { parseJobSpec } from './job-parse.js';
import { IDENTITY, JOB, NETWORK } from './nomad-job-tables.js';
import { NOMAD_SHAPES } from './nomad-job-shapes.js';
import { isObject, writeObject, type NomadShape, type Rule, type Table, type Zero } from './nomad-table.js';
import { publicJob } from './stored-job.js';

const SHAPES_FILE = new URL('./nomad-job-shapes.ts', import.meta.url);
/** Job files: the examples and the corpus of Nomad jobs the CLI tests run. */
const JOB_DIRS = ['../../examples/', '../../examples/docker/', '../../test/nomad-corpus/'].map((d) => new URL(d, import.meta.url));

// ---------------------------------------------------------------------------
// The schema walk: what the writer did before the shapes were data.

type Def = { type: string; innerType?: z.ZodType; element?: z.ZodType; valueType?: z.ZodType; shape?: Record<string, z.ZodType>; getter?: () => z.ZodType };
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** The schema inside optional, nullable and lazy wrappers. */
function bare(s: z.ZodType): z.ZodType {
  let d = defOf(s);
  while (d.type === 'optional' || d.type === 'nullable' || d.type === 'lazy') {
    s = d.type === 'lazy' ? (d.getter as () => z.ZodType)() : (d.innerType as z.ZodType);
    d = defOf(s);
  }
  return s;
}

const shapeOf = (s: z.ZodType): Record<string, z.ZodType> => defOf(bare(s)).shape ?? {};

/** The value Go's encoder writes for a field Berth has nothing for. */
function zeroOf(s: z.ZodType): unknown {
  const d = defOf(s);
  switch (d.type) {
    case 'optional':
      return undefined;
    case 'nullable':
      return null;
    case 'string':
      return '';
    case 'number':
      return 0;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'record':
      return {};
    case 'object':
      return Object.fromEntries(Object.entries(d.shape ?? {}).map(([k, f]) => [k, zeroOf(f)]).filter(([, v]) => v !== undefined));
    default:
      return null;
  }
}

/** The writer as it was: the schema walked beside the table. */
function schemaWriteObject(canon: Record<string, unknown>, table: Table, schema: z.ZodType, key?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, fieldSchema] of Object.entries(shapeOf(schema))) {
    const rule = Object.hasOwn(table, field) ? table[field] : undefined;
    let written: unknown;
    if (rule && 'key' in rule) written = key;
    else if (rule && 'to' in rule && rule.to) {
      const value = canon[rule.to];
      if (value !== undefined) written = schemaWriteValue(value, rule, fieldSchema);
    }
    if (written === undefined) written = zeroOf(fieldSchema);
    if (written !== undefined) out[field] = written;
  }
  return out;
}

function schemaWriteValue(value: unknown, rule: Rule, schema: z.ZodType): unknown {
  if ('obj' in rule) return isObject(value) ? schemaWriteObject(value, rule.obj, schema) : undefined;
  if ('list' in rule) {
    const element = defOf(bare(schema)).element as z.ZodType;
    return Array.isArray(value) ? value.map((item) => (isObject(item) ? schemaWriteObject(item, rule.list, element) : item)) : undefined;
  }
  if ('byName' in rule) {
    const inner = defOf(bare(schema)).valueType as z.ZodType;
    return isObject(value) ? Object.fromEntries(Object.entries(value).map(([name, item]) => [name, isObject(item) ? schemaWriteObject(item, rule.byName, inner, name) : item])) : undefined;
  }
  return 'conv' in rule && rule.conv ? rule.conv.out(value) : value;
}

// ---------------------------------------------------------------------------
// Making the shapes file from the schemas.

/** One shape as made from a schema, before it is printed. */
interface Made {
  name: string;
  zero: Array<[string, Zero]>;
  nested: Array<[string, Made]>;
}

/** src/api's export names by their schema (a lazy stand-in and the schema it built share `_zod`). */
function schemaNames(): Map<unknown, string> {
  const names = new Map<unknown, string>();
  for (const [name, value] of Object.entries(api)) {
    if (value && typeof value === 'object' && '_zod' in value && !names.has(value._zod)) names.set(value._zod, name);
  }
  return names;
}

/** The shapes of `roots` and everything their tables descend into, children first, each (schema, table) once. */
function makeShapes(roots: Array<[Table, z.ZodType]>): Made[] {
  const names = schemaNames();
  const made: Made[] = [];
  const byPair = new Map<string, Made>();
  const tableIds = new Map<Table, number>();
  const taken = new Map<string, number>();
  const make = (table: Table, schema: z.ZodType): Made => {
    const object = bare(schema);
    const base = names.get((object as unknown as { _zod: unknown })._zod);
    if (!base) throw new Error(`a Nomad object the tables write has no name in src/api: ${Object.keys(shapeOf(object)).join(', ')}`);
    if (!tableIds.has(table)) tableIds.set(table, tableIds.size);
    const pair = `${base}#${tableIds.get(table)}`;
    const found = byPair.get(pair);
    if (found) return found;
    const n = taken.get(base) ?? 0;
    taken.set(base, n + 1);
    const shape: Made = { name: n === 0 ? base : `${base}${n + 1}`, zero: [], nested: [] };
    for (const [field, fieldSchema] of Object.entries(shapeOf(object))) {
      const zero = zeroOf(fieldSchema);
      if (zero !== null && zero !== undefined && typeof zero === 'object') {
        throw new Error(`${base}.${field}: Go writes an object or a list as this field's zero value; NomadShape's zeros are plain values (give Zero that case)`);
      }
      shape.zero.push([field, zero as Zero]);
      const rule = Object.hasOwn(table, field) ? table[field] : undefined;
      if (!rule) continue;
      if ('obj' in rule) shape.nested.push([field, make(rule.obj, fieldSchema)]);
      else if ('list' in rule) shape.nested.push([field, make(rule.list, defOf(bare(fieldSchema)).element as z.ZodType)]);
      else if ('byName' in rule) shape.nested.push([field, make(rule.byName, defOf(bare(fieldSchema)).valueType as z.ZodType)]);
    }
    byPair.set(pair, shape);
    made.push(shape);
    return shape;
  };
  for (const [table, schema] of roots) make(table, schema);
  return made;
}

const key = (k: string): string => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k));
const value = (v: Zero): string => (v === undefined ? 'undefined' : v === '' ? "''" : JSON.stringify(v));

/** The text of nomad-job-shapes.ts. */
function shapesFileText(): string {
  const roots = makeShapes([
    [JOB, api.Job],
    [NETWORK, api.NetworkResource],
    [IDENTITY, api.WorkloadIdentity],
  ]);
  const lines = [
    "// Nomad's objects as the job writer (nomad-table.ts writeObject) writes them:",
    "// each field in Go's order with the zero value Go's encoder writes for it,",
    '// and the nested objects the tables (nomad-job-tables.ts) descend into.',
    "// Made from src/api's zod schemas by nomad-job-shapes.test.ts, which also",
    '// checks this file against them; do not edit by hand. After a change to a',
    '// schema or a table:',
    '//   BERTH_WRITE_SHAPES=1 node --import tsx --test src/structs/nomad-job-shapes.test.ts',
    '',
    "import type { NomadShape } from './nomad-table.js';",
  ];
  for (const shape of roots) {
    lines.push('', `const ${shape.name}: NomadShape = {`, '  zero: {');
    for (const [field, zero] of shape.zero) lines.push(`    ${key(field)}: ${value(zero)},`);
    lines.push('  },');
    if (shape.nested.length) lines.push(`  nested: { ${shape.nested.map(([field, inner]) => (field === inner.name ? field : `${key(field)}: ${inner.name}`)).join(', ')} },`);
    lines.push('};');
  }
  lines.push(
    '',
    '/** The shapes the writer starts from: a job, a group network, a workload identity. */',
    'export const NOMAD_SHAPES = { Job, NetworkResource, WorkloadIdentity } as const;',
    '',
  );
  return lines.join('\n');
}

// ---------------------------------------------------------------------------

/** Every job of JOB_DIRS and one written here with most blocks, as canonical specs. */
async function sampleJobs(): Promise<JobSpec[]> {
  const jobs: JobSpec[] = [];
  for (const dir of JOB_DIRS) {
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.hcl')).sort()) {
      const text = readFileSync(join(dir.pathname, file), 'utf8');
      try {
        jobs.push((await parseJobFile(file, text, { vars: [], varFiles: [], env: {}, allowFS: false })).job);
      } catch {
        // A volume file, or a job that needs variables or files: not a job to write here.
      }
    }
  }
  jobs.push(
    parseJobSpec({
      id: 'full',
      type: 'batch',
      meta: { team: 'a' },
      periodic: { cron: '*/5 * * * *', prohibitOverlap: true },
      constraints: [{ attribute: '${attr.kernel.name}', value: 'linux' }],
      groups: [
        {
          name: 'app',
          count: 2,
          network: { mode: 'bridge', ports: [{ label: 'http' }, { label: 'admin', static: 8081, to: 81 }], dns: { servers: ['1.1.1.1'] } },
          services: [{ name: 'web', port: 'http', checks: [{ type: 'http', path: '/', interval: '10s', timeout: '2s', checkRestart: { limit: 3 } }] }],
          volumes: { data: { type: 'csi', source: 'db', mountOptions: { fsType: 'ext4', mountFlags: ['noatime'] } } },
          spreads: [{ attribute: '${node.datacenter}', targets: [{ value: 'dc1', percent: 50 }] }],
          scaling: { min: 1, max: 4 },
          tasks: [
            {
              name: 'server',
              driver: 'raw_exec',
              config: { command: '/bin/sleep', args: ['60'] },
              volumeMounts: [{ volume: 'data', destination: '/data' }],
              templates: [{ data: 'x', destination: 'local/x' }],
              artifacts: [{ source: 'https://example.com/a.tgz' }],
              identities: [{ name: 'default', env: true }, { name: 'vault', aud: ['v'] }],
              resources: { cpuMhz: 100, memoryMb: 64, cores: 1.5 },
            },
            { name: 'init', driver: 'raw_exec', config: { command: '/bin/true' }, lifecycle: { hook: 'prestart' } },
          ],
        },
      ],
    }),
  );
  return jobs;
}

describe("the job writer's shapes", () => {
  it("are src/api's schemas: each field, its order and its zero value, for every object a table writes", () => {
    const text = shapesFileText();
    if (process.env['BERTH_WRITE_SHAPES'] === '1') writeFileSync(SHAPES_FILE, text);
    assert.equal(readFileSync(SHAPES_FILE, 'utf8'), text, 'nomad-job-shapes.ts differs from the schemas: run BERTH_WRITE_SHAPES=1 node --import tsx --test src/structs/nomad-job-shapes.test.ts');
  });

  it('write every sample job, its networks and its identities byte for byte as the schema walk wrote them', async () => {
    const jobs = await sampleJobs();
    assert.ok(jobs.length >= 15, `only ${jobs.length} sample jobs`);
    const same = (canon: object, table: Table, shape: NomadShape, schema: z.ZodType, what: string): void => {
      const c = canon as Record<string, unknown>;
      assert.equal(JSON.stringify(writeObject(c, table, shape)), JSON.stringify(schemaWriteObject(c, table, schema)), what);
    };
    for (const spec of jobs) {
      const job = publicJob(spec);
      same(job, JOB, NOMAD_SHAPES.Job, api.Job, `${spec.id}: the job`);
      for (const group of job.groups) {
        const ports = group.network.ports;
        const network = { ...group.network, reservedPorts: ports.filter((p) => p.static !== undefined), dynamicPorts: ports.filter((p) => p.static === undefined) };
        same(network, NETWORK, NOMAD_SHAPES.NetworkResource, api.NetworkResource, `${spec.id}: group ${group.name}'s network`);
        for (const task of group.tasks) {
          for (const id of task.identities ?? []) same(id, IDENTITY, NOMAD_SHAPES.WorkloadIdentity, api.WorkloadIdentity, `${spec.id}: task ${task.name}'s identity ${id.name}`);
        }
      }
    }
  });

  it("build none of src/api's schemas when a job is written: the first answer after a start pays for none", () => {
    // A fresh process, so that nothing this file built counts: the job is parsed (the spec's own schemas), then written.
    const script = [
      `const { lazySchemasBuilt } = await import(${JSON.stringify(new URL('../api/lazy-schema.ts', import.meta.url).href)});`,
      `const s = await import(${JSON.stringify(new URL('./index.ts', import.meta.url).href)});`,
      "const spec = s.parseJobSpec({ id: 'a', groups: [{ name: 'g', network: { ports: [{ label: 'http' }] }, tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' }, identities: [{ name: 'default', env: true }] }] }] });",
      'const before = lazySchemasBuilt();',
      's.jobToNomad({ ...spec, stop: false, status: "pending", version: 0, groupVersions: {}, submitTime: 1, submitIndex: 1, createIndex: 1, modifyIndex: 1 });',
      's.specToNomadJob(spec);',
      'process.stdout.write(String(lazySchemasBuilt() - before));',
    ].join('\n');
    assert.equal(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' }), '0');
  });
});
