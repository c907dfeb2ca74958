"""The ``asyncapi-kafka`` command: ``demo``, ``inspect``, ``check``, ``sandbox`` and ``peek``.

Examples
--------
$ asyncapi-kafka demo                       # embedded Kafka + registry + Spark, no services needed
$ asyncapi-kafka inspect examples/shop.yaml
$ asyncapi-kafka check doc.yaml --server production
$ asyncapi-kafka sandbox doc.yaml              # embedded Kafka + registry with example data
$ asyncapi-kafka peek doc.yaml --channel orders -n 5 -o kafka.bootstrap.servers=localhost:9092
"""
from __future__ import annotations

import argparse
import gc
import sys

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="asyncapi-kafka",
        description="Read Kafka topics described by AsyncAPI documents into typed Spark DataFrames.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the whole idea on this machine: embedded Kafka, registry and Spark")
    demo.add_argument("--records", type=int, default=1000, help="events per channel (default 1000)")
    demo.add_argument("--keep", action="store_true", help="keep the demo's temporary directory")
    demo.add_argument("--quiet", action="store_true", help="print only the summary")

    from connector.cli._check import add_check_arguments
    from connector.cli._inspect import add_inspect_arguments
    from connector.cli._peek import add_peek_arguments
    from connector.cli._sandbox import add_sandbox_arguments

    add_inspect_arguments(sub.add_parser("inspect", help="show channels, topics, servers and schemas of a document"))
    add_check_arguments(sub.add_parser("check", help="compare a document with a live cluster and registry"))
    add_sandbox_arguments(sub.add_parser(
        "sandbox", help="embedded Kafka + registry with every channel's topic, schemas and example messages"))
    add_peek_arguments(sub.add_parser("peek", help="decode a few records of a channel, without Spark"))
    return parser


def main(argv: list[str] | None = None) -> int:
    # A peek from the command line allocates little and exits: the cyclic collector's passes
    # over the objects the imports create, and the final one at exit, are pure cost (0.3-0.9 s
    # of a 1.5-2.5 s peek measured on the 2-core machine). Only for a real process (argv None):
    # a caller that passes argv keeps its collector.
    quick = argv is None and sys.argv[1:2] == ["peek"]
    if quick:
        gc.disable()
    parser = build_parser()
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
    parser.print_help()
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
