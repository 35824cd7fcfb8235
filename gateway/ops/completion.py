"""``corvid completion bash|zsh|fish``: a completion script made from the argument parser."""

from __future__ import annotations

from gateway.ops.argtree import Parser


def _words(parser: Parser) -> tuple[list[str], dict[str, Parser]]:
    """A parser's option strings and positional choices, and its subcommands by name."""
    options = [s for a in parser.arguments for s in a.option_strings if s.startswith("--")]
    options += [
        str(c) for a in parser.arguments if not a.option_strings and a.choices for c in a.choices
    ]
    return options, parser.commands


def script(parser: Parser, shell: str) -> str:
    if shell == "fish":
        return _fish(parser)
    top_options, commands = _words(parser)
    cases = []
    for name, sub in commands.items():
        options, actions = _words(sub)
        cases.append(f'    {name}) words="{" ".join([*actions, *options])}" ;;')
        for action, inner in actions.items():
            inner_options, _ = _words(inner)
            cases.append(f'    {name}:{action}) words="{" ".join(inner_options)}" ;;')
    body = "\n".join(cases)
    prelude = "autoload -U +X bashcompinit && bashcompinit\n" if shell == "zsh" else ""
    return f"""{prelude}_corvid() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" words="{" ".join([*commands, *top_options])}"
  local key="${{COMP_WORDS[1]}}"
  if [ "$COMP_CWORD" -ge 3 ] && [ "${{COMP_WORDS[2]#-}}" = "${{COMP_WORDS[2]}}" ]; then
    key="${{COMP_WORDS[1]}}:${{COMP_WORDS[2]}}"
  fi
  if [ "$COMP_CWORD" -ge 2 ]; then
    case "$key" in
{body}
    *) words="{" ".join(top_options)}" ;;
    esac
  fi
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}}
complete -o default -F _corvid corvid
"""


def _fish(parser: Parser) -> str:
    """For fish: what to offer after each path of words (``jobs``, ``jobs run``), the path
    being the words typed so far less the options and the values they take."""
    takes_value: set[str] = set()
    rules: list[tuple[str, list[str], list[str]]] = []  # path, words, options

    def walk(p: Parser, path: str) -> None:
        for action in p.arguments:
            if action.option_strings and action.nargs != 0:
                takes_value.update(action.option_strings)
        options, subs = _words(p)
        words = [*subs, *(o for o in options if not o.startswith("-"))]
        rules.append((path, words, [o for o in options if o.startswith("--")]))
        for name, sub in subs.items():
            walk(sub, f"{path} {name}".strip())

    walk(parser, "")
    lines = [
        "function __corvid_path",
        "    set -l path",
        "    set -l skip 0",
        "    for word in (commandline -opc)[2..-1]",
        "        if test $skip = 1",
        "            set skip 0",
        "        else if contains -- $word " + " ".join(sorted(takes_value)),
        "            set skip 1",
        "        else if not string match -q -- '-*' $word",
        "            set -a path $word",
        "        end",
        "    end",
        '    string join " " -- $path',
        "end",
        "function __corvid_at",
        "    set -l path (__corvid_path)",
        '    test "$path" = "$argv[1]"',
        "end",
        "complete -c corvid -f",
    ]
    for path, words, options in rules:
        when = f"-n '__corvid_at \"{path}\"'"
        if words:
            lines.append(f"complete -c corvid {when} -a '{' '.join(words)}'")
        for option in options:
            lines.append(f"complete -c corvid {when} -l {option[2:]}")
    return "\n".join(lines) + "\n"
