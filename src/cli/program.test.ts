import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Help } from 'commander';
import { HOSTPATH_PLUGIN_NAME } from '../csi-plugins/index.js';
import { HOSTPATH_NAME_IN_HELP } from './plugin-command.js';
import { buildProgram, COMMANDS, invokedCommand } from './program.js';

describe('berth --help lists the commands it has not loaded as they are', () => {
  it('lists every command with the term and description of its own definition', async () => {
    const program = await buildProgram();
    const help = new Help();
    const real = program.commands.map((c) => ({ name: c.name(), term: help.subcommandTerm(c), description: c.description() }));
    assert.deepEqual(
      COMMANDS.map(({ name, term, description }) => ({ name, term, description })),
      real,
    );
  });

  it('prints the same top-level help whichever command was built', async () => {
    const texts = await Promise.all([undefined, '', 'job', 'csi'].map(async (only) => (await buildProgram({}, only === undefined ? {} : { only })).helpInformation()));
    for (const text of texts) assert.equal(text, texts[0]);
  });

  it('names the hostpath plugin in help as the plugin names itself', () => {
    assert.equal(HOSTPATH_NAME_IN_HELP, HOSTPATH_PLUGIN_NAME);
  });

  it('finds the command being run or asked about', () => {
    assert.equal(invokedCommand(['node', 'status', '--json']), 'node');
    assert.equal(invokedCommand(['--help']), undefined);
    assert.equal(invokedCommand(['help', 'volume']), 'volume');
    assert.equal(invokedCommand(['nope']), undefined);
  });
});
