"""Snapshot export from a live registry, then offline lookups through FileRegistry / file:// configs."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid

from registry import RegistryConfig, SchemaType, client_for
from registry._file import FileRegistry, export_snapshot
from registry._types import SchemaReference

# as registries store it (Karapace, the stand-in): compact, keys sorted
MONEY = '{"fields":[{"name":"c","type":"long"}],"name":"Money","type":"record"}'
ORDER = '{"fields":[{"name":"m","type":"Money"}],"name":"Order","type":"record"}'
PROTO = 'syntax = "proto3";\nmessage M { int64 a = 1; }\n'


def _populate(server):
    server.register("money", MONEY)
    order = server.register("orders-value", ORDER, references=[SchemaReference("Money", "money", 1)])
    v2 = server.register("orders-value", ORDER.replace("Order", "Order2"),
                         references=[SchemaReference("Money", "money", 1)])
    proto = server.register("odd/sub.ject", PROTO, "PROTOBUF")
    return order, v2, proto


def test_export_and_read_back_offline(server, fast_config, tmp_path):
    order, v2, proto = _populate(server)
    live = client_for(fast_config(server.url))
    assert export_snapshot(live, tmp_path) == 4
    server.stop()  # offline from here on
    off = client_for(RegistryConfig.from_options({"schema.registry.url": tmp_path.as_uri()}))
    assert isinstance(off.backend, FileRegistry)
    s = off.get_schema_by_id(order)
    assert s.text == ORDER and [n for n, _ in s.resolved_references] == ["Money"]
    assert dict(s.resolved_references)["Money"].text == MONEY
    assert off.get_latest("orders-value").id == v2
    assert off.get_version("orders-value", 1).id == order
    assert off.get_schema_by_id(proto).schema_type is SchemaType.PROTOBUF
    assert sorted(off.list_subjects()) == ["money", "odd/sub.ject", "orders-value"]
    assert off.list_versions("orders-value") == [1, 2]
    guid = live.get_schema_by_id(order).guid
    assert off.lookup(("confluent-guid", uuid.UUID(guid).bytes)).id == order
    assert not any(p.name.startswith("..") for p in (tmp_path / "subjects").iterdir())
    assert json.loads((tmp_path / "snapshot.json").read_text())["subject_versions"] == 4


def test_export_selected_subjects_pulls_references(server, fast_config, tmp_path):
    order, _, _ = _populate(server)
    export_snapshot(client_for(fast_config(server.url)), tmp_path, subjects=["orders-value"])
    off = FileRegistry(tmp_path)
    assert sorted(off.list_subjects()) == ["money", "orders-value"]
    assert off.get_schema_by_id(order).resolved_references[0][1].text == MONEY


def test_command_line_entry_point(server, tmp_path):
    order, _, _ = _populate(server)
    server.require_basic_auth("bob", "pw-in-url-123")
    host = server.url.split("//", 1)[1]
    out = subprocess.run([sys.executable, "-m", "registry.snapshot", f"http://bob:pw-in-url-123@{host}",
                          str(tmp_path / "snap")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "exported 4" in out.stdout and "pw-in-url-123" not in out.stdout + out.stderr
    assert FileRegistry(tmp_path / "snap").get_schema_by_id(order).text == ORDER
    snap = json.loads((tmp_path / "snap" / "snapshot.json").read_text())
    assert snap["source"] == server.url
