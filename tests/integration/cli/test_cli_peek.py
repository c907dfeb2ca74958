"""``asyncapi-kafka peek``: each flag reaches the read, the table and JSON output, exit codes, and a
real process against the embedded sandbox that never imports pyspark.

The data: :mod:`tests.integration.peek_data` (time order is record order; record 20 is bad)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from connector.cli import main
from tests.integration.peek_data import BAD, make_topic

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def registry():
    from connector.testing import RegistryServer

    with RegistryServer() as server:
        yield server


@pytest.fixture(scope="module")
def topic(kafka, registry, tmp_path_factory):
    return make_topic(kafka, registry, tmp_path_factory.mktemp("peek-cli"))


def _run(topic, capsys, *flags: str) -> tuple[int, str, str]:
    path, options, _ = topic
    argv = ["peek", path, "--channel", "events", *flags]
    for k, v in options.items():
        argv += ["-o", f"{k}={v}"]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _json_ids(out: str) -> list[int]:
    return [int(json.loads(line)["key"][1:]) for line in out.splitlines()]


def test_table_shows_metadata_schema_id_headers_and_values(topic, capsys):
    code, out, _ = _run(topic, capsys, "-n", "2")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["partition", "offset", "timestamp", "key", "schemaId", "headers", "value"]
    assert lines[1].split()[:5] == ["0", "0", "2026-01-01", "00:00:00.000", "k0"]
    assert lines[1].endswith('{"id":0,"name":"n0"}')
    assert "trace=t1" in lines[2] and lines[2].endswith('{"id":1,"name":"n1"}')
    assert len(lines) == 3


def test_table_shows_an_error_instead_of_the_value(topic, capsys):
    code, out, _ = _run(topic, capsys, "-n", "1", "--from-end")
    assert code == 0
    assert out.splitlines()[1].split()[4] == f"k{BAD}" and "ERROR: " in out


def test_json_is_one_object_per_record_with_every_column(topic, capsys):
    code, out, _ = _run(topic, capsys, "-n", "3", "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["value"] for r in rows] == [{"id": k, "name": f"n{k}"} for k in range(3)]
    assert rows[1]["headers"] == [{"key": "trace", "value": "dDE="}]  # base64, as Spark's to_json
    assert rows[0]["timestamp"] == "2026-01-01T00:00:00.000Z" and rows[0]["partition"] == 0
    assert set(rows[0]) >= {"key", "value", "topic", "partition", "offset", "timestamp", "headers", "schemaId", "_error"}


@pytest.mark.parametrize("flags, expected", [
    (["-n", "4"], lambda m: [0, 1, 2, 3]),
    (["-n", "2", "--from-end"], lambda m: [19, BAD]),
    (["--partition", "3"], lambda m: [k for k, p, _, _ in m if p == 3]),
    (["--partition", "1", "--partition", "2", "-n", "3"], lambda m: [1, 2, 5]),
    (["--offset", "4", "-n", "50"], lambda m: [k for k, _, off, _ in m if off >= 4]),
    (["--timestamp", "2026-01-01T00:00:15Z"], lambda m: [15, 16, 17, 18, 19, BAD]),
    (["--timestamp", "1767225617000", "-n", "2"], lambda m: [17, 18]),
], ids=["n", "from-end", "partition", "partitions", "offset", "timestamp-iso", "timestamp-ms"])
def test_each_flag_selects_the_records(topic, capsys, flags, expected):
    code, out, _ = _run(topic, capsys, "--json", *flags)
    assert code == 0
    assert _json_ids(out) == expected(topic[2])


def test_source_options_pass_through(topic, capsys):
    # peek picks the records, then decodes them: DROPMALFORMED leaves the bad one out.
    code, out, _ = _run(topic, capsys, "--json", "-n", "2", "--from-end", "-o", "mode=DROPMALFORMED")
    assert code == 0 and _json_ids(out) == [19]


@pytest.mark.parametrize("flags, message", [
    (["--offset", "1", "--timestamp", "0"], "not allowed with argument"),
    (["--offset", "1", "--from-end"], "give one"),
    (["--partition", "9"], "no partition 9"),
    (["-o", "nonsense"], "expects KEY=VALUE"),
    (["-o", "startingOfsets=earliest"], "Did you mean 'startingoffsets'"),
    (["--timestamp", "yesterday"], "not a time"),
])
def test_usage_errors_exit_2(topic, capsys, flags, message):
    try:
        code, _, err = _run(topic, capsys, *flags)
    except SystemExit as e:  # argparse's own refusals
        code, err = e.code, capsys.readouterr().err
    assert code == 2 and message in err


def test_no_records_says_so(topic, capsys):
    code, out, err = _run(topic, capsys, "--offset", "1000")
    assert code == 0 and out == "" and "no records" in err


#: what ``peek`` of each channel of the shop document may not load (issue 35): pyspark and pandas
#: never; the other formats' stacks; requests when no HTTP registry is asked
_NOT_LOADED = {
    "orders": ("google.protobuf", "ptars", "msgspec", "jsonschema", "fastjsonschema"),
    "payments": ("google.protobuf", "ptars", "grpc_tools"),
    "shipments": ("msgspec", "jsonschema", "fastjsonschema"),
    "stock": ("google.protobuf", "ptars", "msgspec", "jsonschema", "fastjsonschema", "requests"),
}


def test_a_real_process_against_the_sandbox_imports_only_what_the_channel_uses():
    """``asyncapi-kafka sandbox`` in-process stand-in (the same class), ``peek`` in a fresh
    interpreter as a user runs it: every channel's first record decodes, and neither pyspark nor
    pandas nor another format's stack is in ``sys.modules`` when the command ends."""
    from connector.cli._sandbox import Sandbox

    probe = ("import json, sys; sys.argv = ['asyncapi-kafka'] + sys.argv[1:]\n"
             "from connector.cli import main\n"
             "code = main()\n"
             "print('LOADED', json.dumps(sorted(m for m in ('pyspark', 'pandas', 'boto3', 'fastavro', 'google.protobuf', 'ptars', "
             "'grpc_tools', 'msgspec', 'jsonschema', 'fastjsonschema', 'requests') if m in sys.modules)), file=sys.stderr)\n"
             "sys.exit(code)\n")
    with Sandbox(str(ROOT / "connector" / "examples" / "shop.yaml"), messages=3) as box:
        assert sorted(c["channel"] for c in box.channels) == sorted(_NOT_LOADED)
        for c in box.channels:
            assert c["messages"], c
            args = ["peek", c["options"]["asyncapi"], "--channel", c["channel"], "-n", "1", "--json"]
            for k, v in c["options"].items():
                if k not in ("asyncapi", "channel"):
                    args += ["-o", f"{k}={v}"]
            done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True,
                                  timeout=120, cwd=ROOT)
            assert done.returncode == 0, done.stderr[-2000:]
            row = json.loads(done.stdout)
            assert row["value"] is not None and row["_error"] is None, (c["channel"], row)
            loaded = json.loads(done.stderr.split("LOADED ")[-1])
            denied = ("pyspark", "pandas", "boto3", "fastavro") + _NOT_LOADED[c["channel"]]
            assert not set(loaded) & set(denied), (c["channel"], loaded)
