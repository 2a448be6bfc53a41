// The job language (section `jobspec` of `npm run bench`): parse cost of
// job files through Berth's HCL engine and the schema, per file, p50/p99.
//
// 1. A generated 300-line job file with 20 variables, locals, for
//    expressions, functions and dynamic blocks (goal: p50 < 20 ms).
// 2. The files in examples/ (goal: unchanged from ~1 ms under hcl2json).
// 3. The engine alone (parse + evaluate, no schema) on the 300-line file.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { evaluateConfig } from '../src/hcl/index.js';
import { parseJobFile, parseVolumeFile } from '../src/spec-files/index.js';
import { summarize, timeNs } from './_stats.js';

const EXAMPLES = fileURLToPath(new URL('../examples/', import.meta.url));

/** A job file of about 300 lines: 20 variables, locals, 5 groups with tasks, dynamic blocks and functions. */
export function bigJobFile(): string {
  const lines: string[] = [];
  for (let i = 0; i < 20; i++) {
    const kind = i % 4;
    lines.push(`variable "v${i}" {`);
    if (kind === 0) lines.push('  type    = number', `  default = ${i + 1}`, '  validation {', `    condition     = var.v${i} > 0`, '    error_message = "must be positive."', '  }');
    else if (kind === 1) lines.push('  type    = string', `  default = "value-${i}"`);
    else if (kind === 2) lines.push('  type    = list(string)', `  default = ["a${i}", "b${i}", "c${i}"]`);
    else lines.push('  type    = map(string)', `  default = { level = "info", zone = "z${i}" }`);
    lines.push('}', '');
  }
  lines.push('locals {', '  prefix  = "web-${var.v1}"', '  dests   = [for s in var.v2 : "/srv/${s}"]', '  env     = merge(var.v3, { EXTRA = upper(var.v5) })', '  memory  = max(var.v0 * 64, 128)', '  joined  = join(",", concat(var.v6, var.v10))', '}', '');
  lines.push('job "big" {', '  datacenters = ["dc1"]', '  type        = "service"', '');
  for (let g = 0; g < 5; g++) {
    lines.push(`  group "g${g}" {`, `    count = var.v${(g % 5) * 4} % 3 + 1`, '', '    restart {', '      attempts = 3', '      interval = "5m"', '      delay    = "10s"', '      mode     = "delay"', '    }', '');
    lines.push(`    task "t${g}" {`, '      driver = "raw_exec"', '      config {', '        command = "/bin/sh"', `        args    = ["-c", "echo \${local.prefix}-${g} \${NOMAD_ALLOC_ID} \${local.joined}; sleep 1000"]`, '      }', '');
    lines.push('      env {', `        NAME    = "\${local.prefix}-${g}"`, '        LEVEL   = local.env["level"]', '        EXTRA   = local.env["EXTRA"]', `        SETTING = jsonencode({ group = ${g}, zone = var.v7["zone"] })`, '      }', '');
    lines.push('      resources {', '        cpu    = 100', '        memory = local.memory', '      }', '');
    lines.push('      logs {', '        max_files     = 3', '        max_file_size = 10', '      }', '    }', '  }', '');
  }
  lines.push('}', '');
  return lines.join('\n');
}

async function measure(label: string, parse: () => Promise<unknown>, runs: number): Promise<{ p50Us: number; p99Us: number }> {
  for (let i = 0; i < 20; i++) await parse();
  const samples: bigint[] = [];
  for (let i = 0; i < runs; i++) samples.push(await timeNs(parse));
  const s = summarize(samples);
  console.log(`  ${label.padEnd(36)} p50 ${s.p50Us} us  p99 ${s.p99Us} us`);
  return { p50Us: s.p50Us, p99Us: s.p99Us };
}

export default async function jobspecBench(): Promise<Record<string, unknown>> {
  const big = bigJobFile();
  const lineCount = big.split('\n').length;
  await parseJobFile('big.hcl', big); // it must be a valid job
  const out: Record<string, unknown> = { bigFileLines: lineCount, bigFileVariables: 20 };
  out['bigFile'] = await measure(`${lineCount}-line job, 20 variables`, () => parseJobFile('big.hcl', big), 200);
  out['bigFileEngineOnly'] = await measure('same, HCL engine only', async () => evaluateConfig('big.hcl', big, { variables: true }), 200);
  const examples: Record<string, unknown> = {};
  for (const name of ['hostpath-plugin.hcl', 'writer.hcl', 'reader.hcl', 'volume.hcl']) {
    const text = readFileSync(join(EXAMPLES, name), 'utf8');
    examples[name] = await measure(`examples/${name}`, () => (name === 'volume.hcl' ? parseVolumeFile(name, text, 'create') : parseJobFile(name, text)), 300);
  }
  out['examples'] = examples;
  return out;
}
