// Errors speak HCL: a table of broken job and volume files, each with the
// WHOLE error text the user sees: the field as the file writes it, at
// file:line:col, sorted by line, saying what was expected; never a
// camelCase JSON path, never a library's wording, one diagnostic per bad
// expression, schema and driver-config problems together.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobFile, parseVolumeFile, SpecFileError } from './spec-file.js';

/** [what is wrong, the file (volume files are named "volume: ..."), the whole error text]. */
const CASES: [string, string, string][] = [
  [
    "syntax: missing value",
    "job \"web\" {\n  type = \n}\n",
    "web.hcl:2:10: malformed HCL: Invalid expression: Expected the start of an expression, but found a newline.",
  ],
  [
    "syntax: unclosed block",
    "job \"web\" {\n  group \"g\" {\n",
    "web.hcl:3:1: malformed HCL: Unclosed configuration block: There is no closing brace for this block before the end of the file.",
  ],
  [
    "syntax: unterminated string",
    "job \"web\" {\n  type = \"service\n}\n",
    "web.hcl:2:10: malformed HCL: Unterminated template string: No closing marker was found for the string.",
  ],
  [
    "syntax: stray closing brace",
    "job \"web\" {\n}\n}\n",
    "web.hcl:3:1: malformed HCL: Argument or block definition required: An argument or block definition is required here; this closing brace has no opening one.",
  ],
  [
    "syntax: bad escape",
    "job \"web\" {\n  type = \"a\\qb\"\n}\n",
    "web.hcl:2:12: malformed HCL: Invalid escape sequence: The symbol \"q\" is not a valid escape sequence selector.",
  ],
  [
    "syntax: missing equals",
    "job \"web\" {\n  type \"service\"\n}\n",
    "web.hcl:2:17: malformed HCL: Invalid block definition: Expected a block definition here: \"type\" is followed by a newline.",
  ],
  [
    "syntax: two arguments on a line",
    "job \"web\" {\n  type = \"service\", priority = 50\n}\n",
    "web.hcl:2:19: malformed HCL: Missing newline after argument: An argument definition must end with a newline; found \",\".",
  ],
  [
    "syntax: invalid character",
    "job \"web\" {\n  priority = 50 @\n}\n",
    "web.hcl:2:17: malformed HCL: Invalid character: This character is not used within the language: \"@\".",
  ],
  [
    "syntax: unclosed heredoc",
    "job \"web\" {\n  meta {\n    a = <<EOT\nhello\n",
    "web.hcl:5:1: malformed HCL: Unterminated template string: No closing marker \"EOT\" was found for this heredoc.",
  ],
  [
    "syntax: template label",
    "job \"web-${1}\" {\n}\n",
    "web.hcl:1:10: malformed HCL: Invalid string literal: Template sequences are not allowed in this string; to include a literal \"$\", double it (\"$${\").",
  ],
  [
    "no job block",
    "variable \"x\" {\n  default = 1\n}\n",
    "web.hcl: no job \"<id>\" { ... } block found",
  ],
  [
    "two job blocks",
    "job \"a\" {\n}\njob \"b\" {\n}\n",
    "web.hcl:3:1: a job file holds exactly one job block",
  ],
  [
    "unlabelled job",
    "job {\n}\n",
    "web.hcl:1:1: job: the job block needs its ID as a label: job \"<id>\" { ... }",
  ],
  [
    "stray top-level attribute",
    "region = \"global\"\njob \"web\" {\n}\n",
    "web.hcl:1:1: unexpected argument \"region\" outside the job block (a job file holds variable, locals and one job block)",
  ],
  [
    "wrong type: count string",
    "job \"web\" {\n  group \"g\" {\n    count = \"two\"\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:3:5: count: expected a number",
  ],
  [
    "count negative",
    "job \"web\" {\n  group \"g\" {\n    count = -1\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:3:5: count: must be at least 0",
  ],
  [
    "memory zero",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      resources {\n        memory = 0\n      }\n    }\n  }\n}\n",
    "web.hcl:9:9: resources.memory: must be at least 1",
  ],
  [
    "memory wrong type",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      resources {\n        memory = \"lots\"\n      }\n    }\n  }\n}\n",
    "web.hcl:9:9: resources.memory: expected a number",
  ],
  [
    "memory_max below memory",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      resources {\n        memory     = 256\n        memory_max = 128\n      }\n    }\n  }\n}\n",
    "web.hcl:10:9: resources.memory_max: memory_max must be at least memory",
  ],
  [
    "unknown argument with suggestion",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      kill_timeot = \"5s\"\n    }\n  }\n}\n",
    "web.hcl:8:7: task \"t\": unsupported argument \"kill_timeot\" (did you mean \"kill_timeout\"?)",
  ],
  [
    "unknown block",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      sidekick {\n        policies = [\"x\"]\n      }\n    }\n  }\n}\n",
    "web.hcl:8:7: task \"t\": unsupported block \"sidekick\"",
  ],
  [
    "Nomad block Berth refuses",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      vault {\n        policies = [\"x\"]\n      }\n    }\n  }\n}\n",
    "web.hcl:8:7: vault: Berth does not support `vault`: Berth has no Vault integration; pass secrets through the task's env or files under its secrets dir",
  ],
  [
    "unknown argument in resources",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      resources {\n        memroy = 128\n      }\n    }\n  }\n}\n",
    "web.hcl:9:9: resources: unsupported argument \"memroy\" (did you mean \"memory\"?)",
  ],
  [
    "port: static out of range",
    "job \"web\" {\n  group \"g\" {\n    network {\n      port \"db\" {\n        static = 70000\n      }\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:5:9: static: a static port must be between 1 and 65535",
  ],
  [
    "port: label a shell cannot name",
    "job \"web\" {\n  group \"g\" {\n    network {\n      port \"my port\" {}\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:4:7: port \"my port\": a port label must be 1-64 letters, digits, \"_\", \"-\" or \".\", starting with a letter, digit or \"_\"",
  ],
  [
    "port: label twice",
    "job \"web\" {\n  group \"g\" {\n    network {\n      port \"http\" {}\n      port \"http\" {}\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:5:7: network.port: port \"http\" is defined twice",
  ],
  [
    "port: one static port for two labels",
    "job \"web\" {\n  group \"g\" {\n    network {\n      port \"a\" {\n        static = 9000\n      }\n      port \"b\" {\n        static = 9000\n      }\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:8:9: static: static port 9000 is already asked for by port \"a\"",
  ],
  [
    "port: task-level resources network",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      resources {\n        network {\n          port \"http\" {}\n        }\n      }\n    }\n  }\n}\n",
    "web.hcl:9:9: resources.network: a task's resources { network } is Nomad's deprecated form, and Berth does not take it: move it to the group, e.g. group \"app\" { network { port \"http\" {} } }",
  ],
  [
    "missing driver",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:3:5: driver: required, e.g. \"raw_exec\"",
  ],
  [
    "missing command",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        args = [\"x\"]\n      }\n    }\n  }\n}\n",
    "web.hcl:5:7: config.command: is required: the program to run (a path, or a name found on PATH) (driver raw_exec)",
  ],
  [
    "command wrong type",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = [\"/bin/true\"]\n      }\n    }\n  }\n}\n",
    "web.hcl:6:9: config.command: must be a string (driver raw_exec)",
  ],
  [
    "schema and config together",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        args = [\"x\"]\n      }\n      resources {\n        memory = 0\n      }\n    }\n  }\n}\n",
    "web.hcl:5:7: config.command: is required: the program to run (a path, or a name found on PATH) (driver raw_exec)\nweb.hcl:9:9: resources.memory: must be at least 1",
  ],
  [
    "csi_plugin missing id",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      csi_plugin {\n        type      = \"monolith\"\n        mount_dir = \"/csi\"\n      }\n    }\n  }\n}\n",
    "web.hcl:8:7: csi_plugin.id: required, e.g. \"hostpath\"",
  ],
  [
    "csi_plugin bad type",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      csi_plugin {\n        id        = \"hp\"\n        type      = \"everything\"\n        mount_dir = \"/csi\"\n      }\n    }\n  }\n}\n",
    "web.hcl:10:9: csi_plugin.type: must be one of \"controller\", \"node\", \"monolith\"",
  ],
  [
    "mount of undeclared volume",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      volume_mount {\n        volume      = \"data\"\n        destination = \"/data\"\n      }\n    }\n  }\n}\n",
    "web.hcl:9:9: volume_mount.volume: volume \"data\" is not declared in group \"g\"",
  ],
  [
    "mount with relative destination",
    "job \"web\" {\n  group \"g\" {\n    volume \"data\" {\n      type   = \"csi\"\n      source = \"vol\"\n      access_mode = \"single-node-writer\"\n      attachment_mode = \"file-system\"\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      volume_mount {\n        volume      = \"data\"\n        destination = \"data\"\n      }\n    }\n  }\n}\n",
    "web.hcl:16:9: volume_mount.destination: destination must be an absolute path (it may start with a run-time value such as ${NOMAD_ALLOC_DIR})",
  ],
  [
    "group volume bad access mode",
    "job \"web\" {\n  group \"g\" {\n    volume \"data\" {\n      type            = \"csi\"\n      source          = \"vol\"\n      access_mode     = \"sometimes\"\n      attachment_mode = \"file-system\"\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:6:7: access_mode: must be one of \"single-node-writer\", \"single-node-reader-only\", \"multi-node-reader-only\", \"multi-node-single-writer\", \"multi-node-multi-writer\", \"single-node-single-writer\", \"single-node-multi-writer\"",
  ],
  [
    "restart twice",
    "job \"web\" {\n  group \"g\" {\n    restart {\n      attempts = 1\n    }\n    restart {\n      attempts = 2\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:6:5: restart: block \"restart\" may appear only once",
  ],
  [
    "duplicate task",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:9:5: task: task \"t\" is defined twice",
  ],
  [
    "restart mode enum",
    "job \"web\" {\n  group \"g\" {\n    restart {\n      mode = \"sometimes\"\n    }\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:4:7: restart.mode: must be one of \"fail\", \"delay\"",
  ],
  [
    "priority too high",
    "job \"web\" {\n  priority = 1000\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:2:3: priority: must be at most 100",
  ],
  [
    "datacenters not a list",
    "job \"web\" {\n  datacenters = \"dc1\"\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:2:3: datacenters: expected a list",
  ],
  [
    "job type enum",
    "job \"web\" {\n  type = \"forever\"\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:2:3: type: must be one of \"service\", \"batch\", \"system\"",
  ],
  [
    "no groups",
    "job \"web\" {\n  type = \"service\"\n}\n",
    "web.hcl:1:1: group: required, e.g. group \"app\" { task \"server\" { ... } }",
  ],
  [
    "group without tasks",
    "job \"web\" {\n  group \"g\" {\n    count = 1\n  }\n}\n",
    "web.hcl:2:3: task: required, e.g. task \"server\" { driver = \"raw_exec\" ... }",
  ],
  [
    "undeclared variable",
    "job \"web\" {\n  group \"g\" {\n    count = var.replicas\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:3:13: Reference to undeclared input variable: An input variable with the name \"replicas\" has not been declared. Declare it with a variable \"replicas\" {} block.",
  ],
  [
    "undeclared local",
    "job \"web\" {\n  group \"g\" {\n    count = local.n\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:3:13: Reference to undeclared local value: A local value with the name \"n\" has not been declared in a locals block.",
  ],
  [
    "unknown function",
    "job \"web\" {\n  type = lowercase(\"SERVICE\")\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:2:10: Call to unknown function: There is no function named \"lowercase\" (see \"Coming from Nomad\" in the README for the functions Berth provides).",
  ],
  [
    "function argument",
    "job \"web\" {\n  priority = parseint(\"x\", 10)\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:2:23: Invalid function argument: Invalid value for \"number\" parameter: cannot parse \"x\" as a base 10 integer.",
  ],
  [
    "arithmetic on a string",
    "job \"web\" {\n  group \"g\" {\n    count = \"a\" + 1\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:3:13: Invalid operand: Unsuitable value for left operand: a number is required, not the string \"a\".",
  ],
  [
    "null in template",
    "job \"web\" {\n  type = \"s${null}\"\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:2:14: Invalid template interpolation value: The expression result is null. Cannot include a null value in a string template.",
  ],
  [
    "dynamic without content",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      dynamic \"volume_mount\" {\n        for_each = [\"a\"]\n      }\n    }\n  }\n}\n",
    "web.hcl:8:7: Missing content block: A dynamic block needs exactly one content { ... } block: the body of each block it generates.",
  ],
  [
    "dynamic over a number",
    "job \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n      dynamic \"volume_mount\" {\n        for_each = 3\n        content {\n          volume = \"a\"\n        }\n      }\n    }\n  }\n}\n",
    "web.hcl:9:20: Invalid dynamic for_each value: Cannot use a number in for_each: a list, set or map is required.",
  ],
  [
    "variable wrong default type",
    "variable \"n\" {\n  type    = number\n  default = \"x\"\n}\njob \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:3:13: Invalid value for variable: The value of variable \"n\" is not a number: a number is required, not the string \"x\".",
  ],
  [
    "variable bad type",
    "variable \"n\" {\n  type = integer\n}\njob \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:2:10: Invalid type specification: The keyword \"integer\" is not a valid type specification.",
  ],
  [
    "duplicate variable",
    "variable \"n\" {\n  default = 1\n}\nvariable \"n\" {\n  default = 2\n}\njob \"web\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:4:1: Duplicate variable: Duplicate \"n\" variable definition found; the first is at line 1.",
  ],
  [
    "argument twice",
    "job \"web\" {\n  type = \"service\"\n  type = \"batch\"\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/true\"\n      }\n    }\n  }\n}\n",
    "web.hcl:3:3: Attribute redefined: The argument \"type\" was already set at web.hcl:2:3. Each argument may be set only once.",
  ],
  [
    "volume: missing plugin_id",
    "id = \"db\"\nname = \"db\"\ntype = \"csi\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n",
    "vol.hcl: plugin_id: required, e.g. \"hostpath\"",
  ],
  [
    "volume: unknown argument",
    "id = \"db\"\nname = \"db\"\ntype = \"csi\"\nplugin_id = \"hp\"\npluginid = \"x\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n",
    "vol.hcl:5:1: unsupported argument \"pluginid\" (did you mean \"plugin_id\"?)",
  ],
  [
    "volume: bad capacity",
    "id = \"db\"\nname = \"db\"\ntype = \"csi\"\nplugin_id = \"hp\"\ncapacity_min = \"lots\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n",
    "vol.hcl:5:1: capacity_min: must be a size such as \"1GiB\", \"500MiB\" or \"10GB\"",
  ],
  [
    "volume: bad attachment mode in second capability",
    "id = \"db\"\nname = \"db\"\ntype = \"csi\"\nplugin_id = \"hp\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"floppy\"\n}\n",
    "vol.hcl:11:3: capability[1].attachment_mode: must be one of \"block-device\", \"file-system\"",
  ],
];

describe('errors speak HCL', () => {
  it('has at least 40 cases', () => {
    assert.ok(CASES.length >= 40, String(CASES.length));
  });

  for (const [name, text, expected] of CASES) {
    it(name, async () => {
      const parse = name.startsWith('volume:') ? parseVolumeFile('vol.hcl', text, 'create') : parseJobFile('web.hcl', text);
      const err = await parse.then(
        () => assert.fail('the file was accepted'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof SpecFileError, String(err));
      assert.equal(err.message, expected);
      assert.doesNotMatch(err.message, /[a-z][A-Z]\w*(\.|:)|Too (small|big)|Invalid input|groups\[/, 'no camelCase path or library wording');
      assert.doesNotMatch(err.message, /:1:1: (?!unexpected|job:|Unset|group:)/, 'no 1:1 for something that has a position');
    });
  }
});
