"""Every `protolab` command's --help ends with examples: lines that start with `protolab <the command>`."""

from __future__ import annotations

import argparse

import pytest

from protolab import cli


class _ParsedError(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _commands() -> list[list[str]]:
    """Every command path (`run`, `reference update`, ...) of the parser cli.main builds, found by walking it."""

    def stop(self, *_a, **_k):
        raise _ParsedError(self)

    mp = pytest.MonkeyPatch()
    mp.setattr(argparse.ArgumentParser, "parse_args", stop)
    try:
        cli.main([])
    except _ParsedError as p:
        parser = p.parser
    finally:
        mp.undo()

    def walk(p: argparse.ArgumentParser, path: list[str]) -> list[list[str]]:
        out = [path] if path else []
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    out += walk(child, [*path, name])
        return out

    return walk(parser, [])


COMMANDS = _commands()


def test_the_walk_finds_the_commands_of_both_modules():
    names = {" ".join(c) for c in COMMANDS}
    assert {"run", "validate", "clean", "reference", "reference update", "deploy", "exec", "impair"} <= names


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_s_help_has_an_example(capsys, command):
    with pytest.raises(SystemExit) as done:
        cli.main([*command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "\nexamples:\n" in text, text
    examples = text.split("\nexamples:\n", 1)[1].splitlines()
    assert any(line.strip().startswith(f"protolab {' '.join(command)}") for line in examples), text
