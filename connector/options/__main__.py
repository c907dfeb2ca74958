"""``python -m connector.options --markdown``: print the README's option tables;
``--update README.md``: rewrite them in place between their markers."""
from __future__ import annotations

import argparse
import pathlib

from connector.options._markdown import TABLES, markdown_table, markdown_tables

parser = argparse.ArgumentParser(prog="python -m connector.options",
                                 description="The option table of the asyncapi-kafka source and sink.")
parser.add_argument("--markdown", action="store_true", help="print the README's option tables")
parser.add_argument("--update", metavar="README", help="rewrite the tables of this file in place")
args = parser.parse_args()
if args.update:
    path = pathlib.Path(args.update)
    text = path.read_text(encoding="utf-8")
    for which, (begin, end) in TABLES.items():
        text = text[:text.index(begin)] + markdown_table(which) + text[text.index(end) + len(end):]
    path.write_text(text, encoding="utf-8")
elif args.markdown:
    print(markdown_tables(), end="")
else:
    parser.print_help()
