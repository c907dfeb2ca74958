"""Spark Declarative Pipelines hand a sink's writer the flow's ``queryName`` among its options
(seen with ``spark-pipelines run``, PySpark 4.3): writes accept it, undocumented, as they accept
Spark's own ``checkpointLocation``; reads still refuse it, and it is never advertised."""
import pytest

from connector.errors import ConfigError
from connector.options import parse_any
from connector.options._table import OPTION_DOCS
from connector.options._parse import parse_options

BASE = {"asyncapi": "doc.yaml", "channel": "orders"}


def test_a_pipeline_sinks_query_name_is_accepted_on_writes():
    opts = parse_any({**BASE, "queryname": "publish_paid_orders", "checkpointlocation": "/tmp/c"}, direction="write")
    assert opts.for_scope(streaming=True, direction="write").asyncapi == "doc.yaml"


def test_reads_refuse_it_and_no_list_names_it():
    with pytest.raises(ConfigError, match="applies to writes only"):
        parse_options({**BASE, "queryName": "q"})
    with pytest.raises(ConfigError) as e:
        parse_any({**BASE, "queryNam": "q"}, direction="write")
    assert "Valid options:" in str(e.value) and "queryname" not in str(e.value).split("Valid options:")[1]
    assert "queryname" not in OPTION_DOCS
