"""A real Spark standalone cluster (a master and two workers started from the pyspark wheel,
executors in their own JVMs and Python workers) reading through the source with
``spark-submit --master spark://…`` of ``job.py``, as the README's cluster section says:

- the same environment on every node (a venv at the same path; ``PYSPARK_PYTHON`` names it);
- a packed environment shipped with ``--archives env.tar.gz#env`` (``venv-pack``, pyspark
  excluded: executors take pyspark from Spark itself), ``PYSPARK_PYTHON=./env/bin/python``.

Each case runs a batch read and an AvailableNow stream stopped and restarted with data added in
between, and compares rows (partition, offset, id) one for one with what was produced. The job
also reports which interpreter the executors' Python workers run (from /proc: the cluster is on
this machine), so the packed case cannot pass through the submitting venv's interpreter.
One cluster, one venv and one archive per module."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.cluster.standalone import StandaloneCluster, spark_env
from tests.integration.install.venvs import copy_project
from tests.integration.spark.helpers import ORDER_AVRO, avro_doc, unique_topic

# Generous: on a quiet 2-core machine the module takes about 3 minutes; on a loaded one, many more.
pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.cluster, pytest.mark.timeout(1500)]

JOB = Path(__file__).with_name("job.py")


@pytest.fixture(scope="module")
def cluster_and_workdir(tmp_path_factory):
    """The cluster's JVMs start while the job's environment is built (both take a minute on a
    busy machine). The environment is the README's recipe: ``python3 -m venv env &&
    env/bin/pip install ./asyncapi-kafka`` and ``venv-pack -p env -o env.tar.gz --exclude
    'lib/python*/site-packages/pyspark/*'``."""
    t0 = time.monotonic()
    with StandaloneCluster(tmp_path_factory.mktemp("standalone"), workers=2, cores=1, memory="1g") as cluster:
        work = tmp_path_factory.mktemp("job")
        src = copy_project(work / "asyncapi-kafka")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(work / "env")], check=True, timeout=120)
        # The parent's pip installs into the new venv (pip --python): a venv without pip is
        # created in a second instead of ten, and pip's cache serves the wheels.
        proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(work / "env" / "bin" / "python"),
                               "install", "-q", str(src)], capture_output=True, text=True, timeout=900,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        assert proc.returncode == 0, proc.stderr[-3000:]
        proc = subprocess.run([sys.executable, "-m", "venv_pack", "-p", str(work / "env"), "-o",
                               str(work / "env.tar.gz"), "-q", "--exclude", "lib/python*/site-packages/pyspark/*"],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        size_mb = (work / "env.tar.gz").stat().st_size / 1e6
        print(f"\nvenv + pip install + venv-pack: {time.monotonic() - t0:.0f} s, packed environment: {size_mb:.0f} MB")
        assert size_mb < 400, f"the archive should not carry pyspark's jars ({size_mb:.0f} MB)"
        cluster.wait_ready()
        print(f"standalone cluster ready after {time.monotonic() - t0:.0f} s")
        yield cluster, work


@pytest.fixture(scope="module")
def registry():
    from connector.testing import RegistryServer

    with RegistryServer() as server:
        yield server


class Orders:
    """Avro orders on one topic, partition = id % 4; remembers (partition, offset, id)."""

    def __init__(self, kafka, registry, workdir: Path, name: str):
        import fastavro

        self.kafka, self.topic = kafka, unique_topic(name)
        self.schema_id = registry.register(f"{self.topic}-value", json.dumps(ORDER_AVRO))
        self.parsed = fastavro.parse_schema(ORDER_AVRO)
        self.rows: list[list[int]] = []
        self.next_offset = [0, 0, 0, 0]
        self.doc = workdir / f"{name}.yaml"
        self.doc.write_text(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry.url,
                                     address=self.topic))

    def send(self, ids) -> None:
        import fastavro

        from wireformat import encode_frame

        for i in ids:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, self.parsed, {"id": i, "customer": f"c{i}", "amount": 1.0,
                                                          "status": "NEW", "placed_at": 0, "note": None})
            p = i % 4
            self.kafka.produce(self.topic, encode_frame("confluent", self.schema_id, buf.getvalue()), partition=p)
            self.rows.append([p, self.next_offset[p], i])
            self.next_offset[p] += 1
        self.kafka.flush()


def submit(cluster, workdir: Path, *args: str, packed: bool) -> tuple[list, list, list]:
    """``spark-submit`` of job.py from ``workdir`` with ``env`` activated; returns the batch rows,
    the stream's output rows and the executors' Python workers."""
    env_bin = workdir / "env" / "bin"
    extra = {"PATH": f"{env_bin}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(workdir / "env")}
    if packed:
        extra["PYSPARK_PYTHON"] = "./env/bin/python"
    else:
        extra["PYSPARK_PYTHON"] = extra["PYSPARK_DRIVER_PYTHON"] = str(env_bin / "python")
    env = spark_env(**extra)
    env.pop("SPARK_HOME")  # the activated venv's spark-submit finds its own pyspark
    cmd = [str(env_bin / "spark-submit"), "--master", cluster.master_url, "--executor-memory", "512m",
           "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
           "--conf", "spark.log.level=WARN"]
    if packed:
        cmd += ["--archives", "env.tar.gz#env"]
    t0 = time.monotonic()
    proc = subprocess.run([*cmd, str(JOB), *args], capture_output=True, text=True, timeout=400, cwd=workdir,
                          env=env)
    print(f"spark-submit ({'packed' if packed else 'same-env'}): {time.monotonic() - t0:.0f} s")
    out = {ln.split(" ", 1)[0]: json.loads(ln.split(" ", 1)[1]) for ln in proc.stdout.splitlines()
           if ln.startswith(("BATCH ", "STREAM ", "WORKERS "))}
    assert proc.returncode == 0 and "STREAM" in out, proc.stderr[-5000:] + "\n" + cluster.logs()[-3000:]
    return out["BATCH"], out["STREAM"], out["WORKERS"]


def check_workers(workers, cluster, workdir: Path, packed: bool) -> None:
    # Executors run in the workers' work directories; other daemons on the machine (the
    # driver's own, other test runs') are not this cluster's executors.
    workers = [w for w in workers if w[1].startswith(str(cluster.work_dir))]
    assert workers, "no executor Python worker was seen"
    for argv0, cwd in workers:
        if packed:
            assert argv0 == "./env/bin/python", workers
            assert not (Path(cwd) / "env" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
                        / "site-packages" / "pyspark").exists(), "the archive should not hold pyspark"
        else:
            assert argv0 == str(workdir / "env" / "bin" / "python"), workers


@pytest.mark.parametrize("packed", [False, True], ids=["same-env", "packed-env"])
def test_batch_and_restarted_stream_on_a_standalone_cluster(packed, cluster_and_workdir, registry, kafka):
    cluster, workdir = cluster_and_workdir
    orders = Orders(kafka, registry, workdir, "packed" if packed else "same")
    out, ck = workdir / f"out-{packed}", workdir / f"ck-{packed}"
    job = [str(orders.doc), "orders", "--stream-to", str(out), "--checkpoint", str(ck)]

    orders.send(range(24))
    # packed: the first run finds the source by Spark's static lookup, the second registers it.
    batch, stream, workers = submit(cluster, workdir, *job, packed=packed)
    assert batch == sorted(orders.rows) and stream == sorted(orders.rows)
    check_workers(workers, cluster, workdir, packed)

    orders.send(range(24, 40))  # while the query is stopped
    batch, stream, workers = submit(cluster, workdir, *job, *(["--register"] if packed else []), packed=packed)
    assert batch == sorted(orders.rows) and len(batch) == 40
    assert stream == sorted(orders.rows), "the restarted stream lost or duplicated rows"
    check_workers(workers, cluster, workdir, packed)
