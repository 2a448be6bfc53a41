// The volume doctor: compares Berth's books (claims, publications, mount
// records) with what the plugins and the nodes' kernels say, as `berth
// volume doctor` does, and shows each difference in words with the command
// that repairs it. Writers may run the safe repairs (`volume doctor --fix`)
// after a confirmation, then see what was repaired and what is left;
// read-only tokens see the findings only.

import { useEffect, useState } from 'preact/hooks';
import { fromGoTime, type Drift } from '../api';
import { storageApi, type DoctorReport } from '../api-storage';
import { ActionButton, Loading, Section, Table, short, time } from '../components';
import { useCanWrite } from '../session';
import { FINDING_WORDS } from '../storage-words';

/** Where a finding is, as links: its volume, node and allocation when it names them. */
function where(f: Drift) {
  const parts = [];
  if (f.VolumeID) parts.push(<a href={`/ui/volumes/${encodeURIComponent(f.Namespace || 'default')}/${encodeURIComponent(f.VolumeID)}`}>volume {f.VolumeID}</a>);
  else if (f.ExternalVolumeID) parts.push(<span>plugin volume <code>{f.ExternalVolumeID}</code></span>);
  if (f.NodeID) parts.push(<a href={`/ui/nodes/${encodeURIComponent(f.NodeID)}`}>node {short(f.NodeID)}</a>);
  if (f.AllocID) parts.push(<a href={`/ui/allocations/${encodeURIComponent(f.AllocID)}`}>allocation {short(f.AllocID)}</a>);
  if (f.PluginID) parts.push(<a href={`/ui/plugins/${encodeURIComponent(f.PluginID)}`}>plugin {f.PluginID}</a>);
  return <span class="where">{parts.flatMap((p, i) => (i ? [', ', p] : [p]))}</span>;
}

function FindingTable({ findings, label, empty }: { findings: Drift[]; label: string; empty: string }) {
  return (
    <Table
      label={label}
      cards
      empty={empty}
      head={['Difference', 'What Berth found', 'Where', 'Repair']}
      rows={findings.map((f) => [
        <span data-kind={f.Kind}>{FINDING_WORDS[f.Kind] ?? f.Kind}</span>,
        f.Message,
        where(f),
        <span>
          {f.Fixable ? <span class="ok">safe: the doctor repairs it. </span> : <span class="muted">by hand: </span>}
          <code>{f.Repair}</code>
        </span>,
      ])}
    />
  );
}

/** What a repair did: the findings repaired, those whose repair failed, and what the comparison after it still found. */
function RepairResult({ result }: { result: DoctorReport }) {
  return (
    <Section title="Repaired" id="repaired">
      <FindingTable findings={result.Fixed} label="repaired" empty="Nothing was repaired." />
      {result.FixFailed.length > 0 ? (
        <>
          <h3>Repairs that failed</h3>
          <ul class="trouble">
            {result.FixFailed.map((x) => (
              <li>
                {x.Finding.Message}: <span class="error">{x.Error}</span>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </Section>
  );
}

export function DoctorPage() {
  const canWrite = useCanWrite();
  const [report, setReport] = useState<DoctorReport | undefined>();
  const [error, setError] = useState<Error | undefined>();
  const [checking, setChecking] = useState(false);
  const [repaired, setRepaired] = useState<DoctorReport | undefined>();

  const check = async (): Promise<void> => {
    setChecking(true);
    try {
      setReport(await storageApi.doctor());
      setError(undefined);
    } catch (err) {
      setError(err as Error);
    } finally {
      setChecking(false);
    }
  };
  useEffect(() => void check(), []);

  if (!report) return <main id="main"><h1>Volume doctor</h1><Loading error={error} /></main>;
  const fixable = report.Findings.filter((f) => f.Fixable);
  const repair = async (progress: (m: string) => void): Promise<string> => {
    progress(`Repairing ${fixable.length} difference${fixable.length === 1 ? '' : 's'}…`);
    const out = await storageApi.repair();
    setRepaired(out);
    progress('Repaired; checking again…');
    await check();
    const failed = out.FixFailed.length ? `, ${out.FixFailed.length} failed` : '';
    return `Repaired ${out.Fixed.length} difference${out.Fixed.length === 1 ? '' : 's'}${failed}.`;
  };
  const checkedAt = fromGoTime(report.CheckedAt);
  return (
    <main id="main">
      <h1>Volume doctor</h1>
      <p class="hint">
        Compares Berth's claims, controller publications and mount records with what the plugins and the nodes' kernels say, as{' '}
        <code>berth volume doctor</code> does. Checking repairs nothing.
      </p>
      <p class="actions">
        <button type="button" onClick={() => void check()} disabled={checking} aria-busy={checking}>
          {checking ? 'Checking…' : 'Check again'}
        </button>{' '}
        <span class="muted" data-checked-at={report.CheckedAt}>
          Checked {checkedAt ? time(checkedAt) : 'just now'}.
        </span>
      </p>
      {error ? <p class="error" role="alert">{error.message}</p> : null}
      <Section title={`Differences (${report.Findings.length})`} id="findings">
        {report.Findings.length === 0 ? (
          <p class="ok" data-all-clear key="all-clear">
            All clear: the books match what the plugins and the nodes say.
          </p>
        ) : (
          <FindingTable findings={report.Findings} label="differences" empty="" key="findings" />
        )}
        {/* Kept after a repair (disabled when nothing is left), so its outcome stays in view; keyed so that Preact keeps its state when the findings above turn into "all clear". */}
        {canWrite && (fixable.length > 0 || repaired) ? (
          <p class="actions" data-repair key="repair">
            <ActionButton
              {...(fixable.length === 0 ? { disabledReason: 'Nothing left that the doctor can repair.' } : {})}
              label={fixable.length ? `Repair ${fixable.length} safe difference${fixable.length === 1 ? '' : 's'}` : 'Repair safe differences'}
              confirm={`Repair these ${fixable.length} difference${fixable.length === 1 ? '' : 's'}?\n\n${fixable.map((f) => `- ${f.Message}`).join('\n')}\n\nOnly repairs that cannot lose data are made (volume doctor --fix).`}
              run={repair}
            />
          </p>
        ) : null}
        {report.Findings.length > fixable.length ? (
          <p class="muted">{report.Findings.length - fixable.length} difference(s) need an operator: run the command shown.</p>
        ) : null}
      </Section>
      {report.Errors.length > 0 ? (
        <Section title="Could not check" id="errors">
          <ul class="trouble">
            {report.Errors.map((e) => (
              <li>
                {e.Source}: {e.Message}
              </li>
            ))}
          </ul>
        </Section>
      ) : null}
      {repaired ? <RepairResult result={repaired} /> : null}
    </main>
  );
}
