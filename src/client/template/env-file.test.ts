import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseEnvFile } from './_env-file.js';

// The KEY=VALUE files of `env = true` templates.

describe('env = true files', () => {
  it('reads bare, quoted and exported values, skipping comments and blank lines', () => {
    const text = '# header\n\nA=1\nexport B = two words # trailing comment\nC="line\\nbreak \\"q\\""\nD=\'$NOT_EXPANDED\'\nE=\n';
    assert.deepEqual(parseEnvFile(text), { A: '1', B: 'two words', C: 'line\nbreak "q"', D: '$NOT_EXPANDED', E: '' });
  });

  it('names the line that is not KEY=VALUE', () => {
    assert.throws(() => parseEnvFile('A=1\njust words\n'), { message: 'line 2 is not KEY=VALUE: "just words"' });
    assert.throws(() => parseEnvFile('1BAD=x'), { message: 'line 1 is not KEY=VALUE: "1BAD=x"' });
  });
});
