import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { z } from 'zod';
import { lazySchema } from './lazy-schema.js';

test('a lazy schema is built on its first read, once, and then parses as the schema itself', () => {
  let builds = 0;
  const Port = lazySchema(() => {
    builds++;
    return z.strictObject({ Label: z.string(), Value: z.number().int() });
  });
  const Network = lazySchema(() => z.strictObject({ Mode: z.string(), Ports: z.array(Port).nullable() }));
  assert.equal(builds, 0, 'defining schemas, or a parent naming a child, builds nothing');

  const eager = z.strictObject({ Mode: z.string(), Ports: z.array(z.strictObject({ Label: z.string(), Value: z.number().int() })).nullable() });
  const good = { Mode: 'host', Ports: [{ Label: 'http', Value: 8080 }] };
  const bad = { Mode: 'host', Ports: [{ Label: 'http', Value: 1.5, Extra: true }] };
  assert.deepEqual(Network.parse(good), good);
  assert.equal(builds, 1);
  // The user sees the same problems at the same paths as with schemas built at once.
  assert.deepEqual(Network.safeParse(bad).error?.issues, eager.safeParse(bad).error?.issues);
  assert.equal(builds, 1, 'built once');
});

test('a lazy schema answers as its schema: instanceof, its shape, its methods', () => {
  const Job = lazySchema(() => z.object({ ID: z.string(), Priority: z.number().optional() }));
  assert.ok(Job instanceof z.ZodObject);
  assert.deepEqual(Object.keys(Job.shape), ['ID', 'Priority']);
  assert.ok('shape' in Job);
  const Extended = Job.extend({ Region: z.string() });
  assert.deepEqual(Extended.parse({ ID: 'a', Region: 'global' }), { ID: 'a', Region: 'global' });
  assert.deepEqual(Job.partial().parse({}), {});
  assert.equal(Job.optional().parse(undefined), undefined);
});

test('a builder that throws throws at the read that forced it, and again at the next', () => {
  let calls = 0;
  const Broken = lazySchema((): z.ZodString => {
    calls++;
    throw new Error('no such schema');
  });
  assert.throws(() => Broken.parse('x'), /no such schema/);
  assert.throws(() => Broken.parse('x'), /no such schema/);
  assert.equal(calls, 2);
});

test("once a lazy schema is built, zod's cycle memoizer is set aside: no first-parse walk of each schema's tree", () => {
  const Node = lazySchema(() => z.object({ Name: z.string(), Children: z.array(z.object({ Name: z.string() })) }));
  assert.deepEqual(Node.parse({ Name: 'a', Children: [{ Name: 'b' }] }), { Name: 'a', Children: [{ Name: 'b' }] });
  const memoizer = z.config().memoizer;
  assert.ok(memoizer, 'a memoizer stays set (an unset one is replaced by the default at the next construction)');
  assert.notEqual(memoizer, z.core.memoizer(), "not zod's default");
  // Schemas built from now on parse as zod did before its memoizer: an object reached twice is parsed twice.
  const Inner = z.object({ V: z.number() });
  const shared = { V: 1 };
  const out = z.object({ A: Inner, B: Inner }).parse({ A: shared, B: shared });
  assert.deepEqual(out, { A: { V: 1 }, B: { V: 1 } });
  assert.notEqual(out.A, out.B);
});

test("loading Berth's modules builds no schema: a start builds only what it parses", () => {
  // A fresh process, so that nothing this file imported counts. Every layer that defines or reads schemas at module level.
  const layers = ['api', 'structs', 'spec-files', 'server', 'client', 'agent', 'cli'];
  const script = [
    `const { lazySchemasBuilt } = await import(${JSON.stringify(new URL('./lazy-schema.ts', import.meta.url).href)});`,
    ...layers.map((l) => `await import(${JSON.stringify(new URL(`../${l}/index.ts`, import.meta.url).href)});`),
    'process.stdout.write(String(lazySchemasBuilt()));',
  ].join('\n');
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(out, '0', 'a module-level read of a lazy schema (.shape, .extend(), .parse() at top level) builds it at every start');
});
