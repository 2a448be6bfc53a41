#!/usr/bin/env node
// Verifies that the generated code in src/gen is exactly what `buf generate`
// produces from the current proto sources and buf configuration.
//
// It copies the buf inputs (buf.yaml, buf.gen.yaml, buf.lock and the module
// directories) into a temporary directory, runs `buf generate` there and
// compares the resulting tree with src/gen byte for byte. src/gen itself is
// never touched. Exit code 0 when identical, 1 when anything differs, 2 when
// generation itself failed.
//
// Usage: npm run gen:check   (or: node scripts/check-gen.mjs)

import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const genDirRel = "src/gen";
const genDir = join(root, genDirRel);
const binDir = join(root, "node_modules", ".bin");
const bufBin = join(binDir, process.platform === "win32" ? "buf.cmd" : "buf");

/** Module directories declared in buf.yaml (`- path: <dir>` entries). */
function moduleDirs() {
  const text = readFileSync(join(root, "buf.yaml"), "utf8");
  const dirs = [...text.matchAll(/^\s*-\s*path:\s*["']?([^"'\s#]+)["']?/gm)].map(
    (m) => m[1],
  );
  return dirs.length > 0 ? dirs : ["proto"];
}

/** All files below `dir`, as sorted paths relative to `dir` using "/". */
function listFiles(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  const walk = (d) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else out.push(relative(dir, full).split(sep).join("/"));
    }
  };
  walk(dir);
  return out.sort();
}

function main() {
  if (!existsSync(bufBin)) {
    console.error(`gen:check: ${relative(root, bufBin)} not found; run npm install`);
    return 2;
  }

  const work = mkdtempSync(join(tmpdir(), "berth-gen-check-"));
  try {
    for (const file of ["buf.yaml", "buf.gen.yaml", "buf.lock"]) {
      if (existsSync(join(root, file))) cpSync(join(root, file), join(work, file));
    }
    for (const dir of moduleDirs()) {
      cpSync(join(root, dir), join(work, dir), { recursive: true });
    }

    const result = spawnSync(bufBin, ["generate"], {
      cwd: work,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, PATH: `${binDir}${delimiter}${process.env.PATH ?? ""}` },
    });
    if (result.error || result.status !== 0) {
      console.error(
        `gen:check: buf generate failed${result.error ? `: ${result.error.message}` : ` (exit ${result.status})`}`,
      );
      return 2;
    }

    const freshDir = join(work, genDirRel);
    const fresh = listFiles(freshDir);
    const current = listFiles(genDir);
    if (fresh.length === 0) {
      console.error(`gen:check: buf generate produced nothing in ${genDirRel}`);
      return 2;
    }

    const currentSet = new Set(current);
    const freshSet = new Set(fresh);
    const missing = fresh.filter((f) => !currentSet.has(f));
    const extra = current.filter((f) => !freshSet.has(f));
    const differ = fresh.filter(
      (f) =>
        currentSet.has(f) &&
        !readFileSync(join(freshDir, f)).equals(readFileSync(join(genDir, f))),
    );

    if (missing.length + extra.length + differ.length === 0) {
      console.log("generated code is up to date");
      return 0;
    }
    console.error(`gen:check: ${genDirRel} is out of date:`);
    for (const f of differ) console.error(`  differs: ${genDirRel}/${f}`);
    for (const f of missing) console.error(`  missing: ${genDirRel}/${f}`);
    for (const f of extra) console.error(`  extra:   ${genDirRel}/${f}`);
    console.error("Run `npm run gen` and commit the result.");
    return 1;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

process.exitCode = main();
