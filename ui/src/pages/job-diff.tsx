// A job diff as Nomad's UI shows one (its job-diff component): the job, each
// group and each task with a marker (+ added, - deleted, +/- edited), and
// under an edited one its fields (`Name: "old" => "new"`) and blocks, nested
// as the blocks are. Unchanged fields and blocks are left out.

import type { FieldDiff, JobDiff, ObjectDiff } from '../api-jobs';

type Kind = 'added' | 'deleted' | 'edited' | 'none';

const kindOf = (type: string): Kind => {
  const t = type.toLowerCase();
  return t === 'added' || t === 'deleted' || t === 'edited' ? t : 'none';
};

const MARK: Record<Kind, string> = { added: '+', deleted: '-', edited: '+/-', none: '' };

function Marker({ type }: { type: string }) {
  const k = kindOf(type);
  return (
    <span class={`marker is-${k}`} aria-label={k === 'none' ? undefined : k}>
      {MARK[k]}
    </span>
  );
}

/** Fields and blocks that changed: Nomad's "None" entries are the unchanged ones. */
const changed = <T extends { Type: string }>(xs: T[] | null | undefined): T[] => (xs ?? []).filter((x) => kindOf(x.Type) !== 'none');

function Field({ f }: { f: FieldDiff }) {
  const k = kindOf(f.Type);
  const value = k === 'added' ? `"${f.New}"` : k === 'deleted' ? `"${f.Old}"` : `"${f.Old}" => "${f.New}"`;
  return (
    <div class={`diff-line is-${k}`} data-diff-field={f.Name} data-diff={k}>
      <Marker type={f.Type} /> {f.Name}: <span class="diff-change">{value}</span>
      {f.Annotations?.length ? <span class="diff-note"> ({f.Annotations.join(', ')})</span> : null}
    </div>
  );
}

function FieldsAndObjects({ fields, objects }: { fields: FieldDiff[] | null | undefined; objects: ObjectDiff[] | null | undefined }) {
  return (
    <div class="diff-body">
      {changed(fields).map((f) => (
        <Field f={f} />
      ))}
      {changed(objects).map((o) => (
        <div class={`diff-block is-${kindOf(o.Type)}`} data-diff-object={o.Name} data-diff={kindOf(o.Type)}>
          <Marker type={o.Type} /> {o.Name} {'{'}
          <FieldsAndObjects fields={o.Fields} objects={o.Objects} />
          {'}'}
        </div>
      ))}
    </div>
  );
}

/** How many fields changed in the diff, at every depth (Nomad's UI's "N changes"). */
export function changeCount(diff: JobDiff | null | undefined): number {
  if (!diff) return 0;
  const inObjects = (os: ObjectDiff[] | null | undefined): number => changed(os).reduce((n, o) => n + changed(o.Fields).length + inObjects(o.Objects), 0);
  const part = (p: { Fields: FieldDiff[] | null; Objects: ObjectDiff[] | null }): number => changed(p.Fields).length + inObjects(p.Objects);
  return part(diff) + (diff.TaskGroups ?? []).reduce((n, g) => n + part(g) + (g.Tasks ?? []).reduce((m, t) => m + part(t), 0), 0);
}

export function JobDiffView({ diff }: { diff: JobDiff }) {
  return (
    <div class="job-diff" data-job-diff={diff.ID}>
      <div class={`diff-head is-${kindOf(diff.Type)}`} data-diff={kindOf(diff.Type)}>
        <Marker type={diff.Type} /> <strong>Job: "{diff.ID}"</strong>
      </div>
      <FieldsAndObjects fields={diff.Fields} objects={diff.Objects} />
      {(diff.TaskGroups ?? []).map((g) => (
        <div class={`diff-group is-${kindOf(g.Type)}`} data-diff-group={g.Name} data-diff={kindOf(g.Type)}>
          <div class="diff-head">
            <Marker type={g.Type} /> <strong>Task Group: "{g.Name}"</strong>
            {g.Updates && Object.keys(g.Updates).length ? (
              <span class="diff-note">
                {' '}
                ({Object.entries(g.Updates).map(([kind, n]) => `${n} ${kind}`).join(', ')})
              </span>
            ) : null}
          </div>
          <FieldsAndObjects fields={g.Fields} objects={g.Objects} />
          {(g.Tasks ?? [])
            .filter((t) => kindOf(t.Type) !== 'none')
            .map((t) => (
              <div class={`diff-task is-${kindOf(t.Type)}`} data-diff-task={t.Name} data-diff={kindOf(t.Type)}>
                <div class="diff-head">
                  <Marker type={t.Type} /> Task: "{t.Name}"
                  {t.Annotations?.length ? <span class="diff-note"> ({t.Annotations.join(', ')})</span> : null}
                </div>
                <FieldsAndObjects fields={t.Fields} objects={t.Objects} />
              </div>
            ))}
        </div>
      ))}
    </div>
  );
}
