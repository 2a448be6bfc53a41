// A job's evaluations (GET /v1/job/:id/evaluations): the latest one's
// placement in words, and every evaluation with its status, what triggered
// it and, for groups it could not place, why, in words; blocked evaluations
// (waiting for room on a node) are flagged.

import { fromNs, type Evaluation, type PlacementFailure } from '../api';
import { Badge, Facts, Table, ago, short, time } from '../components';

/** Why a group was not placed, in words: "2 nodes lacked the CSI plugin hostpath; 1 node exhausted memory". */
export function explainPlacement(f: PlacementFailure): string {
  const reasons: Array<[string, number]> = [
    ...Object.entries(f.ConstraintFiltered ?? {}).map(([why, n]): [string, number] => [/^(were|was|lacked|had|could|did|found|reached|exhausted) /.test(why) ? why : `filtered by ${why}`, n]),
    ...Object.entries(f.ClassFiltered ?? {}).map(([cls, n]): [string, number] => [`filtered by class ${cls}`, n]),
    ...Object.entries(f.DimensionExhausted ?? {}).map(([dim, n]): [string, number] => [`exhausted ${dim}`, n]),
  ];
  const parts = reasons.sort((a, b) => b[1] - a[1]).map(([reason, n]) => `${n} node${n === 1 ? '' : 's'} ${reason}`);
  if (f.NodesEvaluated === 0) parts.unshift('no nodes were eligible');
  return parts.join('; ') || 'no reason recorded';
}

/** Each group the evaluation could not place, in words: "web: 2 not placed: 1 node exhausted memory". */
function failuresText(e: Evaluation): string[] {
  return Object.entries(e.FailedTGAllocs ?? {}).map(([group, f]) => `${group}: ${f.CoalescedFailures + 1} not placed: ${explainPlacement(f)}`);
}

const newestFirst = (evals: Evaluation[]): Evaluation[] => [...evals].sort((a, b) => b.CreateTime - a.CreateTime);

/** The latest evaluation: did it place everything it wanted, and if not, why. */
export function Placement({ evals }: { evals: Evaluation[] }) {
  const latest = newestFirst(evals)[0];
  if (!latest) return <p class="empty">No evaluation yet.</p>;
  const failed = Object.entries(latest.FailedTGAllocs ?? {});
  const queued = Object.entries(latest.QueuedAllocations ?? {}).filter(([, n]) => n > 0);
  return (
    <>
      <Facts
        items={[
          ['Latest evaluation', `${short(latest.ID)} (${latest.TriggeredBy}, ${time(fromNs(latest.CreateTime))})`],
          ['Status', <Badge value={latest.Status} />],
          ...(latest.StatusDescription ? ([['Description', latest.StatusDescription]] as Array<[string, string]>) : []),
          ...(queued.length ? ([['Queued', queued.map(([g, n]) => `${g}: ${n}`).join(', ')]] as Array<[string, string]>) : []),
          ...(latest.BlockedEval ? ([['Blocked evaluation', short(latest.BlockedEval)]] as Array<[string, string]>) : []),
        ]}
      />
      {latest.Status === 'pending' ? (
        <p class="empty">Waiting for the scheduler to run this evaluation.</p>
      ) : failed.length === 0 ? (
        <p class="ok">Every allocation this evaluation wanted was placed.</p>
      ) : (
        <Table
          label="placement failures"
          head={['Group', 'Not placed', 'Nodes evaluated', 'Why']}
          empty=""
          rows={failed.map(([group, f]) => [group, String(f.CoalescedFailures + 1), `${f.NodesEvaluated} (filtered ${f.NodesFiltered}, exhausted ${f.NodesExhausted})`, <span data-placement-reason>{explainPlacement(f)}</span>])}
        />
      )}
    </>
  );
}

/** Every evaluation of the job, newest first. */
export function EvaluationList({ evals }: { evals: Evaluation[] }) {
  const blocked = evals.filter((e) => e.Status === 'blocked');
  return (
    <>
      {blocked.length ? (
        <p class="error" role="status" data-blocked-evals={blocked.length}>
          {blocked.length} blocked evaluation{blocked.length === 1 ? '' : 's'}: {blocked.length === 1 ? 'it waits' : 'they wait'} for room on a node (a node joining, or resources freed) to place what could not be placed.
        </p>
      ) : null}
      <Table
        label="evaluations"
        head={['Evaluation', 'Status', 'Triggered by', 'Created', 'Placement']}
        empty="No evaluations."
        rows={newestFirst(evals).map((e) => {
          const failures = failuresText(e);
          const queued = Object.entries(e.QueuedAllocations ?? {}).filter(([, n]) => n > 0);
          return [
            <span data-eval={e.ID} title={e.ID}>
              {short(e.ID)}
            </span>,
            <Badge value={e.Status} />,
            e.TriggeredBy,
            ago(fromNs(e.CreateTime)),
            <span data-eval-placement={e.ID}>
              {e.Status === 'blocked'
                ? `Blocked: waiting to place ${queued.map(([g, n]) => `${n} of ${g}`).join(', ') || 'what an earlier evaluation could not'}${failures.length ? `. ${failures.join('; ')}` : ''}.`
                : failures.length
                  ? failures.join('; ')
                  : e.Status === 'complete'
                    ? `placed everything${e.BlockedEval ? `; blocked evaluation ${short(e.BlockedEval)} waits for the rest` : ''}`
                    : e.StatusDescription || '-'}
            </span>,
          ];
        })}
      />
    </>
  );
}
