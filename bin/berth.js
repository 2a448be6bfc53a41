#!/usr/bin/env node
// The `berth` executable. In a source checkout it runs the TypeScript sources
// through tsx; from a built package it runs dist/.
import { existsSync } from 'node:fs';

const source = new URL('../src/main.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import(new URL('../dist/main.js', import.meta.url).href);
}
