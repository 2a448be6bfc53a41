// `berth volume doctor` (compare Berth's books with the plugins and the
// nodes now, and with --fix repair what is safe) and `berth volume drift`
// (the drift loop's latest comparison), over Berth's additions to Nomad's
// CSI API: `/v1/volumes/doctor` and `/v1/volumes/drift` (DriftReport).

import type { Command } from 'commander';
import type { DriftReport } from '../api/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { goTimestamp } from './plugin-status-command.js';

/** Adds `doctor` and `drift` to `berth volume`. */
export function addVolumeDoctorCommands(volume: Command, ctx: CommandContext): void {
  apiCommand(
    volume
      .command('doctor')
      .description(
        "Compare Berth's claims and registrations with what the plugins' controllers and the nodes' kernels say, and list every difference with the command that repairs it. --fix repairs what is safe (never a volume an allocation uses). A plugin it could not ask is a difference. Exits 0 when clean, 1 when differences remain, 2 when a repair failed",
      )
      .argument('[id]', 'only this volume (ID or a unique prefix)')
      .option('--fix', 'repair what is safe: release claims whose allocation is gone, unpublish what no claim stands behind, unmount mounts no record names'),
    ['volume doctor', 'volume doctor shared-data', 'volume doctor --fix', 'volume doctor --json'],
  ).action(apiAction(ctx, async (s, args, opts) => {
    ctx.state.exitCode = doctorExitCode(await doctor(s, args, opts));
  }));

  apiCommand(
    volume
      .command('drift')
      .description("Show the differences the server's drift loop found at its last comparison of Berth's books with the plugins and the nodes (volume doctor compares now)"),
    ['volume drift', 'volume drift --json'],
  ).action(apiAction(ctx, drift));
}

/** `volume doctor`'s exit codes: nothing left to do, differences (or sources not asked) remain, a repair failed. */
export const DOCTOR_EXIT = { CLEAN: 0, DIFFERENCES: 1, FIX_FAILED: 2 } as const;

/**
 * The exit code of a report: 2 when a repair failed, 1 when a difference
 * is left unrepaired or a source could not be asked, else 0. Pure.
 */
export function doctorExitCode(r: DriftReport): number {
  if (r.FixFailed.length > 0) return DOCTOR_EXIT.FIX_FAILED;
  const fixed = new Set(r.Fixed.map((f) => JSON.stringify(f)));
  const left = r.Findings.filter((f) => !fixed.has(JSON.stringify(f)));
  return left.length > 0 || r.Errors.length > 0 ? DOCTOR_EXIT.DIFFERENCES : DOCTOR_EXIT.CLEAN;
}

async function doctor(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<DriftReport> {
  const id = idArg ? await s.api.resolve(KINDS.volume, idArg, { namespace: s.namespace }) : undefined;
  const query = id ? { volume: id, namespace: s.namespace } : {};
  const fix = Boolean(opts['fix']);
  if (!s.out.json) s.out.line(`==> Comparing ${id ? `volume "${id}"` : 'every volume'} with the plugins' controllers and the nodes' mounts${fix ? ', repairing what is safe' : ''}...`);
  const { body: r } = fix
    ? await s.api.request<DriftReport>('POST', '/v1/volumes/doctor', { query })
    : await s.api.get<DriftReport>('/v1/volumes/doctor', query);
  if (s.out.json) s.out.document(r);
  else printReport(s, r, fix);
  return r;
}

async function drift(s: ApiSession): Promise<void> {
  const { body: r } = await s.api.get<DriftReport>('/v1/volumes/drift');
  if (s.out.json) return s.out.document(r);
  if (goTimestamp(r.CheckedAt) === '-') {
    s.out.line('==> The drift loop has not compared the books yet (volume doctor compares now)');
    return;
  }
  s.out.line(`==> Last compared at ${goTimestamp(r.CheckedAt)}`);
  printReport(s, r, false);
}

/** The findings of a report, each with its repair (and with --fix, whether it was repaired). */
function printReport(s: ApiSession, r: DriftReport, fix: boolean): void {
  for (const e of r.Errors) s.out.warn(`warning: could not check ${e.Source}: ${e.Message}`);
  if (r.Findings.length === 0) {
    s.out.line(`==> No differences: Berth's books, the plugins and the nodes agree${r.Errors.length ? ' (on what could be checked)' : ''}`);
    return;
  }
  const fixed = new Set(r.Fixed.map((f) => JSON.stringify(f)));
  const failed = new Map(r.FixFailed.map((x) => [JSON.stringify(x.Finding), x.Error]));
  s.out.line(`==> ${r.Findings.length} difference${r.Findings.length === 1 ? '' : 's'}:`);
  for (const f of r.Findings) {
    const key = JSON.stringify(f);
    const state = fixed.has(key) ? ' [fixed]' : failed.has(key) ? ' [fix failed]' : '';
    s.out.line();
    s.out.line(`  ${s.style.bold(f.Kind)}${state}`);
    s.out.line(`    ${f.Message}`);
    if (failed.has(key)) s.out.line(`    fix failed: ${failed.get(key) as string}`);
    if (!fixed.has(key)) s.out.line(`    repair: ${f.Repair}${f.Fixable && !fix ? '   (volume doctor --fix does this)' : ''}`);
  }
  if (fix) {
    const left = r.Findings.length - fixed.size;
    s.out.line();
    s.out.line(`==> Repaired ${fixed.size} of ${r.Findings.length}${left ? `; ${left} need${left === 1 ? 's' : ''} a hand (see the repairs above)` : ''}`);
  }
}
