"""Command-line interface: ``insdel demo | run | reproduce | datasets | policies``.

Each sub-command lives with the module it drives; that module exposes ``register_cli(subparsers)``
which adds its parser and sets ``func`` (a callable taking the parsed ``args`` and returning an exit
code).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# modules that contribute sub-commands
_CLI_MODULES = ("insdel.experiments", "insdel.datasets", "insdel.policies")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="insdel",
        description="Insertion and deletion tests of feature attributions for regression models.",
    )
    parser.add_argument("--version", action="version", version=f"insdel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _CLI_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a module not written yet
            if exc.name != name:
                raise
            continue
        register = getattr(module, "register_cli", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        print("\ninterrupted; finished chunks are saved, run the same command again to resume.",
              file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, KeyError, TypeError) as exc:
        if getattr(args, "debug", False):
            raise
        print(f"insdel: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
