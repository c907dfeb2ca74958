"""Export a live schema registry into an offline snapshot directory.

Usage::

    python -m registry.snapshot URL DIR [--subject S ...] [--option schema.registry.NAME=VALUE ...]

``URL`` may carry ``user:password@`` (moved into basic auth, never printed); credentials can also
come from the environment variable ``SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO``. The directory is
readable by :class:`registry.FileRegistry` (``schema.registry.url=file:///DIR``).
"""
from __future__ import annotations

import argparse
import os
import sys

from registry._cache import make_backend
from registry._config import RegistryConfig
from registry.errors import RegistryError
from registry._file import export_snapshot

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the exporter; returns the process exit status."""
    ap = argparse.ArgumentParser(prog="python -m registry.snapshot", description=__doc__.split("\n")[0])
    ap.add_argument("url", help="registry base URL (comma-separated for failover)")
    ap.add_argument("directory", help="snapshot directory to write")
    ap.add_argument("--subject", action="append", help="export only this subject (repeatable)")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="any schema.registry.* option (repeatable)")
    args = ap.parse_args(argv)
    options = {"schema.registry.url": args.url}
    env_auth = os.environ.get("SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO")
    if env_auth:
        options["schema.registry.basic.auth.user.info"] = env_auth
    for item in args.option:
        name, sep, value = item.partition("=")
        if not sep:
            ap.error(f"--option needs NAME=VALUE, got {name!r}")
        options[name.strip().lower()] = value
    try:
        config = RegistryConfig.from_options(options)
        with make_backend(config) as client:
            n = export_snapshot(client, args.directory, args.subject,
                                source=",".join(config.redacted_urls()))
    except RegistryError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"exported {n} subject version(s) to {args.directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
