// The job's latest deployment (GET /v1/job/:id/deployment): its status, each
// group's desired/placed/healthy/unhealthy allocations and canaries, the
// canary allocations with their health, the allocations that took the new
// version in place (a count or constraint change keeps them running), and
// Promote (PUT /v1/deployment/promote/:id) and Fail (PUT
// /v1/deployment/fail/:id) for a token that may write.

import { fromGoTime, fromNs } from '../api';
import { jobActions, jobsApi, type AllocStub, type Deployment } from '../api-jobs';
import { ActionButton, Badge, Facts, Table, ago, short, time } from '../components';
import { watchUntil } from '../live';

const ACTIVE = new Set(['running', 'paused', 'pending', 'blocked', 'unblocking']);

/** An allocation's health in its deployment, in words. */
export function allocHealth(a: Pick<AllocStub, 'DeploymentStatus'>): 'healthy' | 'unhealthy' | 'checking' {
  const h = a.DeploymentStatus?.Healthy;
  return h === true ? 'healthy' : h === false ? 'unhealthy' : 'checking';
}

/** Allocations of the deployed version that existed before the deployment: they took the version in place. */
export function updatedInPlace(d: Deployment, allocs: AllocStub[]): AllocStub[] {
  return allocs.filter((a) => a.JobVersion === d.JobVersion && a.CreateIndex < d.CreateIndex && a.DesiredStatus === 'run');
}

export function DeploymentSection({ deployment: d, allocs, canWrite, ns, id }: { deployment: Deployment | null; allocs: AllocStub[]; canWrite: boolean; ns: string; id: string }) {
  if (!d) return <p class="empty">No deployment: the job has no update block, or nothing rolled out yet.</p>;
  const groups = Object.entries(d.TaskGroups ?? {});
  const active = ACTIVE.has(d.Status);
  const needsPromotion = groups.some(([, g]) => g.DesiredCanaries > 0 && !g.Promoted);
  const canaryIds = new Set(groups.flatMap(([, g]) => g.PlacedCanaries ?? []));
  const canaries = allocs.filter((a) => canaryIds.has(a.ID));
  const unhealthyCanaries = canaries.filter((a) => allocHealth(a) !== 'healthy').length;
  const canariesShort = groups.some(([, g]) => (g.PlacedCanaries?.length ?? 0) < g.DesiredCanaries);
  const hasCanaries = groups.some(([, g]) => g.DesiredCanaries > 0);
  const promoteBlocked = !active
    ? `the deployment is ${d.Status}`
    : !needsPromotion
      ? 'the canaries are promoted'
      : canariesShort || unhealthyCanaries > 0
        ? 'the canaries are not all healthy yet'
        : undefined;
  const inPlace = updatedInPlace(d, allocs);
  const placedNew = groups.reduce((n, [, g]) => n + g.PlacedAllocs, 0) - inPlace.length;

  const settle = (verb: string) => (progress: (m: string) => void) =>
    watchUntil(['deployment'], async () => {
      const now = await jobsApi.deployment(ns, id);
      if (!now || now.ID !== d.ID) return `${verb}; a newer deployment replaced it.`;
      if (!ACTIVE.has(now.Status)) return `${verb}: deployment ${now.Status} (${now.StatusDescription}).`;
      const healthy = Object.values(now.TaskGroups ?? {}).reduce((n, g) => n + g.HealthyAllocs, 0);
      const total = Object.values(now.TaskGroups ?? {}).reduce((n, g) => n + g.DesiredTotal, 0);
      progress(`${verb}: ${healthy} of ${total} allocations healthy…`);
      return undefined;
    });
  const promote = async (progress: (m: string) => void): Promise<string> => {
    await jobActions.promote(d.ID);
    return settle('Promoted')(progress);
  };
  const fail = async (progress: (m: string) => void): Promise<string> => {
    await jobActions.fail(d.ID);
    return settle('Failed by hand')(progress);
  };

  return (
    <div data-deployment={d.ID} data-deployment-status={d.Status}>
      <Facts
        items={[
          ['Deployment', short(d.ID)],
          ['Status', <Badge value={d.Status === 'successful' ? 'healthy' : d.Status} label={d.Status} />],
          ['Description', d.StatusDescription],
          ['Job version', String(d.JobVersion)],
          ['Started', time(fromNs(d.CreateTime))],
          ['Kind', inPlace.length > 0 && placedNew <= 0 ? 'in-place update' : canaryIds.size > 0 || groups.some(([, g]) => g.DesiredCanaries > 0) ? 'canary' : 'rolling'],
        ]}
      />
      {needsPromotion && active ? (
        <p class="hint" data-needs-promotion>
          {canariesShort || unhealthyCanaries > 0
            ? 'Waiting for the canaries to be placed and turn healthy before they can be promoted.'
            : 'The canaries are healthy: promote them to roll the new version out to the rest, or fail the deployment.'}
        </p>
      ) : null}
      {canWrite ? (
        // Kept while the deployment is shown (disabled once it ended), so an action's outcome stays in view.
        <div class="actions" key={d.ID}>
          {hasCanaries ? (
            <ActionButton
              label="Promote"
              confirm={`Promote the canaries of deployment ${short(d.ID)}? Version ${d.JobVersion} then replaces the other allocations.`}
              run={promote}
              {...(promoteBlocked ? { disabledReason: promoteBlocked } : {})}
            />
          ) : null}
          <ActionButton
            label="Fail"
            danger
            confirm={`Fail deployment ${short(d.ID)}? Nothing more of version ${d.JobVersion} is placed.`}
            run={fail}
            {...(active ? {} : { disabledReason: `the deployment is ${d.Status}` })}
          />
        </div>
      ) : null}
      <Table
        label="deployment groups"
        head={['Group', 'Desired', 'Placed', 'Healthy', 'Unhealthy', 'Canaries', 'Promoted', 'In place', 'Auto revert', 'Progress by']}
        empty="No group rolls out with an update block."
        rows={groups.map(([name, g]) => [
          name,
          String(g.DesiredTotal),
          String(g.PlacedAllocs),
          String(g.HealthyAllocs),
          String(g.UnhealthyAllocs),
          `${g.PlacedCanaries?.length ?? 0}/${g.DesiredCanaries}`,
          g.DesiredCanaries > 0 ? (g.Promoted ? 'yes' : 'no') : 'n/a',
          String(inPlace.filter((a) => a.TaskGroup === name).length),
          g.AutoRevert ? 'yes' : 'no',
          active ? time(fromGoTime(g.RequireProgressBy)) : '-',
        ])}
      />
      {canaries.length ? (
        <>
          <h3>Canaries</h3>
          <Table
            label="canary allocations"
            head={['Allocation', 'Group', 'Node', 'Status', 'Health', 'Modified']}
            empty=""
            rows={canaries.map((a) => [
              <a href={`/ui/allocations/${a.ID}`}>{short(a.ID)}</a>,
              a.TaskGroup,
              <a href={`/ui/nodes/${a.NodeID}`}>{a.NodeName || short(a.NodeID)}</a>,
              <Badge value={a.ClientStatus} />,
              <span data-canary-health={a.ID}>
                <Badge value={allocHealth(a)} />
              </span>,
              ago(fromNs(a.ModifyTime)),
            ])}
          />
        </>
      ) : null}
      {inPlace.length ? (
        <p class="hint" data-in-place={inPlace.length}>
          Updated in place: {inPlace.map((a) => short(a.ID)).join(', ')} kept running and took version {d.JobVersion} without a restart.
        </p>
      ) : null}
    </div>
  );
}
