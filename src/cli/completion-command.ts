// `berth completion bash|zsh|fish`: a shell completion script generated from
// the commander tree (every command, subcommand and option berth has), so it
// never falls behind the commands. Words after the command path complete to
// files (job and volume files).

import { Argument, Command } from 'commander';
import type { CommandContext } from './command-context.js';

/** What one command completes to. */
interface Node {
  /** `/job/run`; the program is the empty path. */
  path: string;
  subs: string[];
  options: string[];
}

/** Every command of the tree with its subcommands and options (long and short), program first. */
export function completionTree(program: Command): Node[] {
  const nodes: Node[] = [];
  const walk = (cmd: Command, path: string): void => {
    const options = cmd.options.flatMap((o) => [o.long, o.short].filter((f): f is string => Boolean(f)));
    nodes.push({ path, subs: cmd.commands.map((c) => c.name()), options: [...options, '--help'] });
    for (const sub of cmd.commands) walk(sub, `${path}/${sub.name()}`);
  };
  walk(program, '');
  return nodes;
}

/** The lookup function every script shares the shape of: `<path>:subs|opts` -> words. */
function cases(nodes: Node[], line: (key: string, words: string[]) => string): string {
  return nodes.flatMap((n) => [line(`${n.path}:subs`, n.subs), line(`${n.path}:opts`, n.options)]).join('\n');
}

/** The bash script (also the body of the zsh one); `source <(berth completion bash)`. */
export function bashScript(nodes: Node[]): string {
  return `# berth shell completion for bash. Load it with: source <(berth completion bash)
_berth_words() {
  case "$1:$2" in
${cases(nodes, (key, words) => `    "${key}") echo "${words.join(' ')}" ;;`)}
  esac
}
_berth_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmdpath="" word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    case "$word" in -*) continue ;; esac
    if [[ " $(_berth_words "$cmdpath" subs) " == *" $word "* ]]; then cmdpath="$cmdpath/$word"; fi
  done
  if [[ "$cur" == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_berth_words "$cmdpath" opts)" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -W "$(_berth_words "$cmdpath" subs)" -- "$cur")
  fi
}
complete -o default -F _berth_complete berth
`;
}

/** The zsh script: `source <(berth completion zsh)` (or save it as _berth on $fpath). */
export function zshScript(nodes: Node[]): string {
  return `#compdef berth
# berth shell completion for zsh. Load it with: source <(berth completion zsh)
_berth_words() {
  case "$1:$2" in
${cases(nodes, (key, words) => `    "${key}") echo "${words.join(' ')}" ;;`)}
  esac
}
_berth() {
  local cmdpath="" word i subs
  for ((i = 2; i < CURRENT; i++)); do
    word="\${words[i]}"
    [[ "$word" == -* ]] && continue
    if [[ " $(_berth_words "$cmdpath" subs) " == *" $word "* ]]; then cmdpath="$cmdpath/$word"; fi
  done
  if [[ "\${words[CURRENT]}" == -* ]]; then
    compadd -- \${=$(_berth_words "$cmdpath" opts)}
  else
    subs="$(_berth_words "$cmdpath" subs)"
    if [[ -n "$subs" ]]; then compadd -- \${=subs}; else _files; fi
  fi
}
if (( $+functions[compdef] )); then compdef _berth berth; fi
`;
}

/** The fish script: `berth completion fish | source` (or save it under ~/.config/fish/completions/berth.fish). */
export function fishScript(nodes: Node[]): string {
  return `# berth shell completion for fish. Load it with: berth completion fish | source
function __berth_words
    switch "$argv[1]:$argv[2]"
${cases(nodes, (key, words) => `        case '${key}'\n            printf '%s\\n' ${words.map((w) => `'${w}'`).join(' ')}`)}
    end
end
function __berth_path
    set -l cmdpath ''
    for word in (commandline -opc)[2..-1]
        string match -q -- '-*' $word; and continue
        if contains -- $word (__berth_words "$cmdpath" subs)
            set cmdpath "$cmdpath/$word"
        end
    end
    echo $cmdpath
end
function __berth_has_subs
    test -n "$(__berth_words (__berth_path) subs)"
end
complete -c berth -n __berth_has_subs -f -a '(__berth_words (__berth_path) subs)'
complete -c berth -n 'string match -q -- "-*" (commandline -ct)' -f -a '(__berth_words (__berth_path) opts)'
`;
}

const SCRIPTS = { bash: bashScript, zsh: zshScript, fish: fishScript } as const;

/** Builds `berth completion`; `wholeTree` builds the program with every command (once, when the script is printed). */
export function completionCommand(ctx: CommandContext, wholeTree: () => Promise<Command>): Command {
  return new Command('completion')
    .description('Print a shell completion script (bash, zsh or fish) for every berth command and flag')
    .addArgument(new Argument('<shell>', 'the shell').choices(Object.keys(SCRIPTS)))
    .addHelpText(
      'after',
      `
Examples:
  $ source <(berth completion bash)        # in ~/.bashrc
  $ source <(berth completion zsh)         # in ~/.zshrc
  $ berth completion fish > ~/.config/fish/completions/berth.fish`,
    )
    .action(async (shell: keyof typeof SCRIPTS) => {
      ctx.io.stdout(SCRIPTS[shell](completionTree(await wholeTree())));
    });
}
