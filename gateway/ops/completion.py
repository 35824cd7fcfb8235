"""``corvid completion bash|zsh``: a completion script made from the argument parser itself, so
it offers exactly the commands, actions and options ``corvid`` takes. Load it with
``eval "$(corvid completion bash)"`` (zsh: the same with ``zsh``, which uses bash's)."""

from __future__ import annotations

import argparse


def _words(parser: argparse.ArgumentParser) -> tuple[list[str], dict[str, argparse.ArgumentParser]]:
    """A parser's option strings and positional choices, and its subcommands by name."""
    options = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    options += [
        str(c)
        for a in parser._actions
        if not a.option_strings and a.choices and not isinstance(a, argparse._SubParsersAction)
        for c in a.choices
    ]
    subs: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            subs.update(action.choices)
    return options, subs


def script(parser: argparse.ArgumentParser, shell: str) -> str:
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
