"""The CLI loads only the module of the command it runs, and still knows every command."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from aegis.cli import _TOP_COMMANDS, build_parser, main


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_the_table_names_what_each_module_registers() -> None:
    for module, commands in _TOP_COMMANDS.items():
        parser = argparse.ArgumentParser()
        top = parser.add_subparsers()
        __import__(module, fromlist=["register"]).register(top)
        assert _commands(parser) == set(commands), module


def test_without_a_command_every_command_is_known() -> None:
    every = {c for commands in _TOP_COMMANDS.values() for c in commands} | {"spec"}
    assert _commands(build_parser()) == every
    assert _commands(build_parser(["--help"])) == every


@pytest.mark.parametrize("argv", [["agent", "--help"], ["spec", "check", "--help"]])
def test_a_command_registers_only_its_own_module(argv: list[str]) -> None:
    parser = build_parser(argv)
    assert argv[0] in _commands(parser)
    assert len(_commands(parser)) <= 3


def test_a_typo_is_refused_with_the_list_of_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["agnet"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'agnet'" in err and "'agent'" in err and "'spec'" in err


def test_an_agent_process_does_not_load_kubernetes_or_the_generator() -> None:
    code = (
        "import sys; from aegis.cli import main\n"
        "try: main(['agent', '--help'])\n"
        "except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'codegen')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"
