"""The ``asyncapi-kafka`` command: ``demo``, ``inspect``, ``check``, ``sandbox`` and ``peek``.

Examples
--------
$ asyncapi-kafka demo                       # embedded Kafka + registry + Spark, no services needed
$ asyncapi-kafka inspect examples/shop.yaml
$ asyncapi-kafka check doc.yaml --server production
$ asyncapi-kafka sandbox doc.yaml              # embedded Kafka + registry with example data
$ asyncapi-kafka peek doc.yaml --channel orders -n 5 -o kafka.bootstrap.servers=localhost:9092
$ asyncapi-kafka serve &                       # later peeks run in a warm process (see _server.py)
"""
from __future__ import annotations

import argparse
import gc
import importlib
import sys

__all__ = ["main", "build_parser"]


#: sub-command -> (its module, the function declaring its arguments)
_ARGUMENTS = {"inspect": ("connector.cli._inspect", "add_inspect_arguments"),
              "check": ("connector.cli._check", "add_check_arguments"),
              "sandbox": ("connector.cli._sandbox", "add_sandbox_arguments"),
              "peek": ("connector.cli._peek", "add_peek_arguments"),
              "serve": ("connector.cli._server", "add_serve_arguments")}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command``, only that sub-command's arguments are
    declared (the others keep their name and help), so a run imports only its own command's
    module: ``peek`` does not load what ``check`` needs, ``--help`` loads none."""
    parser = argparse.ArgumentParser(
        prog="asyncapi-kafka",
        description="Read Kafka topics described by AsyncAPI documents into typed Spark DataFrames.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the whole idea on this machine: embedded Kafka, registry and Spark")
    demo.add_argument("--records", type=int, default=1000, help="events per channel (default 1000)")
    demo.add_argument("--keep", action="store_true", help="keep the demo's temporary directory")
    demo.add_argument("--quiet", action="store_true", help="print only the summary")

    helps = {"inspect": "show channels, topics, servers and schemas of a document",
             "check": "compare a document with a live cluster and registry",
             "sandbox": "embedded Kafka + registry with every channel's topic, schemas and example messages",
             "peek": "decode a few records of a channel, without Spark",
             "serve": "keep a warm process that runs this installation's peek commands"}
    for name, text in helps.items():
        p = sub.add_parser(name, help=text)
        if command is None or command == name:
            module, declare = _ARGUMENTS[name]
            getattr(importlib.import_module(module), declare)(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    # A peek from the command line allocates little and exits: the cyclic collector's passes
    # over the objects the imports create, and the final one at exit, are pure cost (0.3-0.9 s
    # of a 1.5-2.5 s peek measured on the 2-core machine). Only for a real process (argv None):
    # a caller that passes argv keeps its collector.
    quick = argv is None and sys.argv[1:2] == ["peek"]
    given = sys.argv[1:] if argv is None else argv
    if quick:
        from connector.cli._server import run_remote

        code = run_remote(given)  # a warm server of this installation, when one runs
        if code is not None:
            return code
        gc.disable()
        from connector.cli._process import pyarrow_without_pandas

        pyarrow_without_pandas()
    parser = build_parser(given[0] if given and given[0] in _ARGUMENTS else "")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from connector.cli._demo import run_demo

        return run_demo(records=args.records, keep=args.keep, quiet=args.quiet)
    if args.command == "inspect":
        from connector.cli._inspect import inspect_command

        return inspect_command(args)
    if args.command == "check":
        from connector.cli._check import check_command

        return check_command(args)
    if args.command == "peek":
        from connector.cli._peek import peek_command

        code = peek_command(args)
        if quick:
            gc.freeze()  # the interpreter's exit then skips them
        return code
    if args.command == "sandbox":
        from connector.cli._sandbox import sandbox_command

        return sandbox_command(args)
    if args.command == "serve":
        from connector.cli._server import serve_command

        return serve_command(args, main)
    parser.print_help()
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
