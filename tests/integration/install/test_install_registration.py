"""``format("asyncapi-kafka")`` with no ``register`` call, from a directory outside the
repository, after installing the package as the README says: ``pip install .`` and
``pip install -e .`` (issue 17).

PySpark finds ``pyspark_*`` modules with ``pkgutil.iter_modules()``, which does not see
import-hook finders; the editable install must therefore be a plain ``.pth`` entry
(``package-dir = {"" = "."}`` in pyproject.toml selects setuptools' static-pth strategy).
Each case builds a fresh venv (dependencies inherited, project absent — checked), installs
from a copy of the sources, and runs a read in a child process whose Spark driver and Python
workers all use that venv's interpreter; the Kafka cluster and registry live in this process."""
from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from tests.integration.install.venvs import (
    assert_project_absent,
    clean_env,
    copy_project,
    make_venv,
    pip_install,
)
from tests.integration.spark.helpers import avro_doc, produce_orders, unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.jvm]

READ_SCRIPT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    path = sys.argv[1]
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    rows = (spark.read.format("asyncapi-kafka").option("asyncapi", path).option("channel", "orders").load()
            .select("value.id", "value.customer").collect())
    print("RESULT " + json.dumps(sorted([r.id, r.customer] for r in rows)), flush=True)
    spark.stop()
""")


@pytest.fixture()
def orders_doc(kafka, registry_server, tmp_path):


    topic = unique_topic("install")
    expected = produce_orders(kafka, registry_server, topic, 10, partitions=4)
    path = tmp_path / "doc.yaml"
    path.write_text(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url, address=topic))
    return str(path), expected


@pytest.mark.parametrize("editable", [False, True], ids=["pip-install", "pip-install-e"])
def test_format_found_without_register_outside_the_repo(editable, orders_doc, tmp_path):
    doc, expected = orders_doc
    src = copy_project(tmp_path / "src")
    python = make_venv(tmp_path / "venv")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert_project_absent(python, outside)
    pip_install(python, *(["-e", str(src)] if editable else [str(src)]))
    script = outside / "read.py"
    script.write_text(READ_SCRIPT)
    env = clean_env(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
    proc = subprocess.run([str(python), str(script), doc], capture_output=True, text=True, timeout=300,
                          cwd=outside, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    assert json.loads(lines[0][len("RESULT "):]) == expected


SANDBOX_PROBE = textwrap.dedent("""
    import json, sys
    import connector.testing
    from connector.cli._demo import demo_document_path
    print("PROBE " + json.dumps({"testing": connector.testing.__file__, "doc": demo_document_path()}), flush=True)
""")


def test_sandbox_runs_from_the_installed_wheel(tmp_path):
    """``asyncapi-kafka sandbox`` starts the stand-ins of ``connector.testing`` at run time: a
    regular (non-editable) install must ship that package and the example document."""
    src = copy_project(tmp_path / "src")
    venv = tmp_path / "venv"
    python = make_venv(venv)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert_project_absent(python, outside)
    pip_install(python, str(src))
    env = clean_env(PYTHONUNBUFFERED="1")
    probe = subprocess.run([str(python), "-c", SANDBOX_PROBE], capture_output=True, text=True, timeout=120,
                           cwd=outside, env=env)
    lines = [ln for ln in probe.stdout.splitlines() if ln.startswith("PROBE ")]
    assert probe.returncode == 0 and lines, probe.stderr[-4000:]
    found = json.loads(lines[0][len("PROBE "):])
    # imported from the installed package, not from the source copy
    assert str(venv) in found["testing"] and str(src) not in found["testing"], found
    assert str(venv) in found["doc"], found
    proc = subprocess.run([str(venv / "bin" / "asyncapi-kafka"), "sandbox", found["doc"], "--messages", "2",
                           "--no-wait"], capture_output=True, text=True, timeout=300, cwd=outside, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    channels = [json.loads(ln[len("SANDBOX "):]) for ln in proc.stdout.splitlines() if ln.startswith("SANDBOX ")]
    assert channels and all(c["messages"] for c in channels), proc.stdout[-4000:]
