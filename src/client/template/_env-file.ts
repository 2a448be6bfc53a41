// The KEY=VALUE format of an `env = true` template (as Nomad reads it with
// go-envparse): blank lines and `#` comments skipped, an optional `export `,
// values bare, 'single-quoted' (verbatim) or "double-quoted" (with escapes).

const KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const DQ_ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\', $: '$' };

/** Parses an env file. Pure; throws Error naming the line for a malformed one. */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const body = line.replace(/^export\s+/, '');
    const eq = body.indexOf('=');
    const key = eq < 0 ? body : body.slice(0, eq).trim();
    if (eq < 0 || !KEY.test(key)) throw new Error(`line ${i + 1} is not KEY=VALUE: ${JSON.stringify(raw.slice(0, 80))}`);
    let value = body.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith("'") && value.endsWith("'")) value = value.slice(1, -1);
    else if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1).replace(/\\(.)/g, (_m, c: string) => DQ_ESCAPES[c] ?? `\\${c}`);
    else value = value.replace(/\s+#.*$/, '');
    out[key] = value;
  });
  return out;
}
