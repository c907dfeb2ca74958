"""Each entry point imports only what its call uses (issue 35).

A fresh interpreter per entry point, then ``sys.modules``: a heavy stack that the call does not
use is a second or more of every command, notebook ``import`` and Spark Python worker (pandas
alone 0.2-0.4 s of CPU, pulled in by pyarrow's first conversion of a Python value). What each
stack is for: pandas (nothing of ours: only PySpark's pandas paths), requests (an HTTP registry,
when a client is made), boto3 (Glue), google.protobuf/grpc_tools/ptars (a Protobuf schema),
msgspec/jsonschema/fastjsonschema (a JSON Schema), numba/llvmlite (the first kernel that runs),
pyspark (``connector.spark`` only), fastavro and confluent-kafka's serde stack (tests only).
The runtime side (what ``peek`` of each format loads) is checked in
``tests/integration/cli/test_cli_peek.py``.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

#: loaded by no import of the package (a run loads what its format and registry need)
HEAVY = ("pandas", "requests", "urllib3", "boto3", "botocore", "google.protobuf", "grpc_tools", "grpc", "ptars",
         "msgspec", "jsonschema", "fastjsonschema", "numba", "llvmlite", "fastavro", "cryptography", "httpx",
         "confluent_kafka.schema_registry", "connector.testing")
#: not even these for the command line's help and the top-level package
ARROW = ("pyarrow", "numpy", "yaml", "confluent_kafka", "pyspark")

CASES = {
    # a notebook's or a script's import
    "import connector": ("import connector", HEAVY + ARROW),
    "import connector.read (peek's and the source's core)": ("import connector.read", HEAVY + ("pyspark",)),
    "import connector.write (the sink's core)": ("import connector.write", HEAVY + ("pyspark",)),
    "import registry": ("import registry", HEAVY + ("pyspark", "yaml", "confluent_kafka")),
    "import wireformat": ("import wireformat", HEAVY + ("pyspark", "yaml", "confluent_kafka")),
    # the command line
    "asyncapi-kafka --help": ("from connector.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
                              HEAVY + ARROW),
    "asyncapi-kafka peek --help": ("from connector.cli import main\ntry:\n    main(['peek', '--help'])\n"
                                   "except SystemExit:\n    pass", HEAVY + ARROW),
    # Spark's lookup of `pyspark_*` modules (the driver and every planner worker import it)
    "Spark's data source lookup": ("import pyspark_asyncapi_kafka", HEAVY + ("pyarrow", "numpy", "yaml")),
    # the driver side of spark.read...load() and of a write (the DataSource class)
    "the DataSource": ("from connector.spark import AsyncApiKafkaDataSource", HEAVY),
    # what a Spark Python worker unpickles: the batch and stream readers, the writers
    "a worker's reader": ("import connector.spark._batch, connector.spark._stream", HEAVY),
    # a write task: the writer unpickled, then its write() (connector.write's setup unpickled, its task run)
    "a worker's writer": ("import connector.spark._sink, connector.write", HEAVY),
    "the column functions": ("import connector.spark.functions", HEAVY),
}


@pytest.mark.parametrize("name", list(CASES))
def test_entry_point_imports_only_what_it_uses(name):
    code, denied = CASES[name]
    probe = code + f"\nimport sys\nprint('LOADED', [m for m in {denied!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    lines = [line for line in out.stdout.splitlines() if line.startswith("LOADED ")]
    assert out.returncode == 0 and lines, out.stderr[-3000:]
    assert lines[-1] == "LOADED []", f"{name} imports {lines[-1][len('LOADED '):]}"
