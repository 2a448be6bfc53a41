// Reading a stream of JSON objects written one after another, as Nomad's
// streamed files and logs are (Go's encoders write `{...}{...}`, or one per
// line): each whole object is parsed as soon as its closing brace arrives,
// whatever the chunks' boundaries.

/**
 * Yields each top-level JSON object of `source` in order; whitespace
 * between them is skipped. Throws SyntaxError on anything else (a stray
 * character, a cut-off object at the end). Returns when `source` ends.
 */
export async function* jsonObjects(source: AsyncIterable<Uint8Array | string>): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let buf = '';
  // The scan's state is kept across chunks: where the current object starts, its depth, and whether it is inside a string.
  let start = -1;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let scanned = 0;
  const scan = function* (): Generator<unknown> {
    for (let i = scanned; i < buf.length; i++) {
      const c = buf[i] as string;
      if (start < 0) {
        if (c === '{') {
          start = i;
          depth = 1;
        } else if (!/\s/.test(c)) throw new SyntaxError(`unexpected ${JSON.stringify(c)} between JSON objects`);
        continue;
      }
      if (inString) {
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        depth--;
        if (depth === 0) {
          yield JSON.parse(buf.slice(start, i + 1));
          buf = buf.slice(i + 1);
          i = -1;
          start = -1;
        }
      }
    }
    scanned = buf.length;
  };
  for await (const chunk of source) {
    buf += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    yield* scan();
    if (start > 0) {
      // Keep only the unfinished object.
      buf = buf.slice(start);
      scanned -= start;
      start = 0;
    }
  }
  buf += decoder.decode();
  yield* scan();
  if (start >= 0) throw new SyntaxError('the stream ended inside a JSON object');
}
