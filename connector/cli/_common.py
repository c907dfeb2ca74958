"""What the CLI commands share: loading a document, the ``--ref-root`` and ``-o KEY=VALUE``
arguments and the ``check`` report. Kept apart so that ``inspect``, ``check`` (and the broker
side of ``check``) and ``peek`` import it instead of each other."""
from __future__ import annotations

import argparse
import json
import sys

__all__ = ["add_ref_root_argument", "add_option_argument", "option_pairs", "open_document"]


def _err(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def add_ref_root_argument(parser: argparse.ArgumentParser) -> None:
    """``--ref-root DIR``: where relative file ``$ref``\\s may reach (shared by the commands)."""
    parser.add_argument("--ref-root", metavar="DIR", default=None,
                        help="directory relative file $refs may reach (default: the document's "
                             "directory); widen it for documents that share files through ../")


def add_option_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``-o/--option KEY=VALUE`` (repeatable) into ``args.options``; :func:`option_pairs` splits them."""
    parser.add_argument("-o", "--option", metavar="KEY=VALUE", action="append", dest="options", default=[],
                        help=f"{what} (repeatable)")


def option_pairs(pairs) -> dict[str, str]:
    """``["k=v", ...]`` as a dict (the value may contain ``=``); a pair without ``=`` is a ConfigError.

    Examples
    --------
    >>> option_pairs(["kafka.bootstrap.servers=h:9092", "kafka.sasl.jaas.config=a=b"])
    {'kafka.bootstrap.servers': 'h:9092', 'kafka.sasl.jaas.config': 'a=b'}
    """
    from connector.errors import ConfigError  # (pyarrow comes with it: not for --help)

    out = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"-o expects KEY=VALUE, got {pair.split('=')[0]!r}")
        out[key] = value
    return out


def open_document(path: str, allow_remote_refs: bool = False, ref_root: str | None = None):
    """Load ``path``; on failure print the error (with its document path) and return None."""
    from connector.asyncapi import load_document
    from connector.errors import AsyncApiKafkaError

    try:
        return load_document(path, allow_remote_refs=allow_remote_refs, ref_root=ref_root)
    except (AsyncApiKafkaError, OSError, ValueError) as e:
        _err(f"cannot load {path}: {e}")
        return None


class _Report:
    """Collects results and prints them as they come (a slow broker shows progress)."""

    def __init__(self, out=None, as_json: bool = False):
        self.out = out or sys.stdout
        self.as_json = as_json
        self.counts = {"ok": 0, "drift": 0, "warn": 0, "error": 0, "created": 0}
        self.results: list[dict] = []
        self.context: dict = {}

    def note(self, text: str) -> None:
        """Progress text (headings, the registry in use): printed in text mode only."""
        if not self.as_json:
            print(text, file=self.out)

    def line(self, status: str, where: str, text: str, diff=()) -> None:
        self.counts[status] += 1
        self.results.append({"status": status, "where": where, "text": text,
                             "diff": [{"what": d[0], "expected": str(d[1]), "actual": str(d[2])} for d in diff],
                             **({"channel": self.context["channel"]} if "channel" in self.context else {})})
        if self.as_json:
            return
        print(f"  {status:<7} {where}: {text}", file=self.out)
        for label, expected, actual in diff:
            print(f"          - expected {label}: {expected}", file=self.out)
            print(f"          + actual {label}: {actual}", file=self.out)
        self.out.flush()

    def exit_code(self) -> int:
        if self.counts["error"]:
            return 2
        return 1 if self.counts["drift"] else 0

    def summary(self) -> str:
        c = self.counts
        parts = [f"{c['ok']} ok", f"{c['drift']} drift"]
        if c["created"]:
            parts.append(f"{c['created']} created")
        parts += [f"{c['warn']} warning{'s' * (c['warn'] != 1)}", f"{c['error']} error{'s' * (c['error'] != 1)}"]
        verdict = {0: "in sync", 1: "drift found", 2: "check incomplete"}[self.exit_code()]
        return f"{', '.join(parts)}: {verdict} (exit {self.exit_code()})"

    def finish(self, **head) -> int:
        """Print the summary (text) or the whole report (JSON); return the exit code."""
        code = self.exit_code()
        if self.as_json:
            verdict = {0: "in sync", 1: "drift found", 2: "check incomplete"}[code]
            print(json.dumps({**head, "results": self.results, "counts": self.counts,
                              "verdict": verdict, "exit_code": code}, indent=2, default=str), file=self.out)
        else:
            print(file=self.out)
            print(self.summary(), file=self.out)
        return code
