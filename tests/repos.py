"""Test repositories kept under ``tests/data``, copied where a test may write and point at live peers."""
from __future__ import annotations

import pathlib
import shutil

DATA = pathlib.Path(__file__).resolve().parent / "data"
MULTI_SERVICE = DATA / "asyncapi" / "multi-service"


def copy_repo(src: pathlib.Path, dest: pathlib.Path, *, bootstrap: str = "localhost:9092",
              registry: str = "http://127.0.0.1:8081") -> pathlib.Path:
    """Copy the repository ``src`` to ``dest`` with the Kafka and registry placeholders replaced;
    returns ``dest``."""
    shutil.copytree(src, dest)
    for path in dest.rglob("*"):
        if path.is_file() and path.suffix in (".yml", ".yaml", ".json"):
            text = path.read_text()
            new = text.replace("BOOTSTRAP_PLACEHOLDER", bootstrap).replace("http://REGISTRY_PLACEHOLDER", registry)
            if new != text:
                path.write_text(new)
    return dest
