// The chaos kit's plan: which phase, victim and instant each cycle gets,
// from the seed alone. Pure; private to test/chaos (see _harness.ts).

import type { ClusterKind } from './_cluster.js';

/** `web-update`: a new version of the web workload (_web.ts), rolled out one allocation at a time. */
export type Phase = 'steady' | 'job-run' | 'job-stop' | 'plugin-update' | 'web-update';
export type Victim = 'agent' | 'server' | 'client' | 'plugin' | 'executor';

/** One cycle, decided by the seed alone before anything runs. */
export interface CyclePlan {
  index: number;
  cluster: ClusterKind;
  phase: Phase;
  victim: Victim;
  /** How long after the phase's command starts the victim is SIGKILLed. */
  delayMs: number;
  /** Which executor dies when there are several (a fraction of their count). */
  pick: number;
  /** Whether the writer job should run once the cycle is over. */
  writerAfter: boolean;
}

/** A small seeded PRNG (mulberry32): the same seed gives the same numbers in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VICTIMS: Record<ClusterKind, Victim[]> = { dev: ['agent', 'plugin', 'executor'], pair: ['server', 'client', 'plugin', 'executor'] };
const MAX_DELAY: Record<Phase, number> = { steady: 2000, 'job-run': 1500, 'job-stop': 1000, 'plugin-update': 2000, 'web-update': 4000 };

/**
 * The whole run's plan from `seed`: cycles split evenly over `clusters` (in
 * that order); victims taken in a shuffled round so that every one is hit;
 * phases chosen from what the writer's state allows, and with `web` a roll
 * of the web workload among them. Pure.
 */
export function planCycles(seed: number, cycles: number, clusters: readonly ClusterKind[], web = false): CyclePlan[] {
  const rnd = prng(seed);
  const plans: CyclePlan[] = [];
  clusters.forEach((cluster, ci) => {
    const n = Math.floor(cycles / clusters.length) + (ci < cycles % clusters.length ? 1 : 0);
    let writer = true;
    let round: Victim[] = [];
    for (let i = 0; i < n; i++) {
      if (round.length === 0) round = [...VICTIMS[cluster]].sort(() => rnd() - 0.5);
      const victim = round.shift() as Victim;
      const choices: Phase[] = writer ? ['steady', 'steady', 'job-stop', 'plugin-update'] : ['job-run', 'job-run', 'plugin-update', 'steady'];
      if (web) choices.push('web-update', 'web-update');
      const phase = choices[Math.floor(rnd() * choices.length)] as Phase;
      const writerAfter: boolean = phase === 'job-stop' ? false : phase === 'job-run' ? true : writer;
      plans.push({ index: plans.length + 1, cluster, phase, victim, delayMs: Math.floor(rnd() * MAX_DELAY[phase]), pick: rnd(), writerAfter });
      writer = writerAfter;
    }
  });
  return plans;
}
