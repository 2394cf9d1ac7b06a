"""tfmc-convert SUBCOMMAND ...: the dispatcher of tfmc.convert.

A subcommand NAME is the module tfmc.convert.NAME, imported only when NAME
is run, so that a subcommand whose module (or a package it needs) is missing
fails alone. Every ConversionError and argparse error is one line
`error: ...` on stderr, exit status 1 (and so is a MemoryError, which the
readers' bounds should leave unreached).
"""

import argparse
import importlib
import sys

from tfmc.convert.common import ConversionError

# name -> one-line summary; the module is tfmc.convert.<name>
SUBCOMMANDS = {
    "pytorch": "a PyTorch state_dict checkpoint (tutorial, per-head, torch.nn.Transformer or mapped names)",
    "marian": "a Marian / OPUS-MT model",
    "fairseq": "a fairseq transformer checkpoint",
}


class ErrorParser(argparse.ArgumentParser):
    """argparse with the converters' error convention (one line, exit 1)."""

    def error(self, message):
        raise ConversionError(message)


def _subcommand_module(name):
    module_name = f"tfmc.convert.{name}"
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            raise ConversionError(f"subcommand '{name}' is not available: this tfmc has no {module_name}")
        if e.name and e.name.split(".")[0] != "tfmc":
            raise ConversionError(f"subcommand '{name}' needs the Python package '{e.name}', "
                                  f"which is not installed")
        raise


def _parser(prog, argv):
    """The top-level parser; only the subcommand named in argv gets its options."""
    parser = ErrorParser(prog=prog, description="Convert a trained model into a tfmc model directory.")
    subs = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", parser_class=ErrorParser)
    subs.required = True
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, summary in SUBCOMMANDS.items():
        sub = subs.add_parser(name, help=summary, description=f"Convert {summary} into a tfmc model directory.")
        if name == chosen:
            module = _subcommand_module(name)
            sub.set_defaults(run=module.run)
            module.add_arguments(sub)
    return parser


def _run_alone(name, prog, argv):
    """One subcommand under its own command name (tools/tfmc-import-pytorch)."""
    module = _subcommand_module(name)
    parser = ErrorParser(prog=prog, description=f"Convert {SUBCOMMANDS[name]} into a tfmc model directory.")
    module.add_arguments(parser)
    return module.run(parser.parse_args(argv))


def main(argv=None, prog="tfmc-convert", subcommand=None):
    """Run one subcommand; returns the exit status (errors printed here).
    With `subcommand`, argv holds only that subcommand's arguments and
    `prog` names the command (an alias such as tfmc-import-pytorch)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if subcommand is not None:
            status = _run_alone(subcommand, prog, argv)
        else:
            args = _parser(prog, argv).parse_args(argv)
            status = args.run(args)
        return 0 if status is None else status
    except ConversionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except MemoryError:  # a last guard: the readers bound what inputs may ask for
        print("error: out of memory: the input asks for more memory than this machine has", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
