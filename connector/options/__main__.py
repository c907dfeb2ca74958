"""``python -m connector.options --markdown``: print the option tables the docs site shows
(``docs/options.md``; the site generates them when it is built)."""
from __future__ import annotations

import argparse

from connector.options._markdown import markdown_tables

parser = argparse.ArgumentParser(prog="python -m connector.options",
                                 description="The option table of the asyncapi-kafka source and sink.")
parser.add_argument("--markdown", action="store_true", help="print the option tables as Markdown")
args = parser.parse_args()
if args.markdown:
    print(markdown_tables(), end="")
else:
    parser.print_help()
