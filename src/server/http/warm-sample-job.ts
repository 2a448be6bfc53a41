// The job the API warms its registration path with while it idles (main:
// warm-job-path.ts; each front worker: api-workers/fast-register.ts), so
// the first job a user submits runs through compiled code.

/** A job as `berth job run` sends one: a group of one raw_exec task. */
export function sampleJob(): Record<string, unknown> {
  return {
    ID: 'berth-warm-up',
    Name: 'berth-warm-up',
    Type: 'service',
    Datacenters: ['dc1'],
    TaskGroups: [
      {
        Name: 'g',
        Count: 1,
        Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: '/bin/true' }, Resources: { CPU: 5, MemoryMB: 10 } }],
      },
    ],
  };
}
