"""The streaming latency benchmark's arithmetic, on synthetic timestamps and progress events
(no Spark session, no broker: the benchmark itself never runs in the suite)."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks.stream_latency_bench import _python_floor_source, batch_overhead, latency_stats


def test_latency_is_sink_minus_produce_over_the_window_only():
    rng = np.random.default_rng(7)
    produced = np.sort(rng.uniform(0.0, 100.0, 20_000))
    # batches every 0.5 s: each row reaches the sink at the end of the batch after its produce time
    sink = np.floor(produced / 0.5) * 0.5 + 0.5 + 0.25
    got = latency_stats(sink, produced, 10.0, 90.0)
    inside = (produced >= 10.0) & (produced < 90.0)
    assert got["rows"] == int(inside.sum())
    lat = (sink - produced)[inside] * 1000
    assert got["p50_ms"] == pytest.approx(np.median(lat), abs=0.1)
    assert got["p99_ms"] == pytest.approx(np.percentile(lat, 99), abs=0.1)
    assert 250 < got["p50_ms"] < got["p99_ms"] <= got["max_ms"] <= 750.0 + 0.1
    # a late row outside the window does not count
    sink[-1] += 1000.0
    assert latency_stats(sink, produced, 10.0, 90.0)["max_ms"] == got["max_ms"]


def test_latency_of_an_empty_window_and_mismatched_arrays():
    assert latency_stats(np.array([5.0]), np.array([4.0]), 10.0, 20.0) == {
        "rows": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    with pytest.raises(ValueError):
        latency_stats(np.array([1.0, 2.0]), np.array([1.0]), 0.0, 5.0)


def test_batch_overhead_skips_idle_triggers_and_warm_up_and_repeats():
    def p(batch, rows, **ms):
        return {"batchId": batch, "numInputRows": rows, "durationMs": ms}

    progresses = [p(0, 900, addBatch=5000, triggerExecution=9000),       # warm-up
                  p(1, 100, addBatch=100, triggerExecution=150, latestOffset=4),
                  p(1, 0, latestOffset=2, triggerExecution=2),               # idle trigger, same id
                  p(2, 300, addBatch=300, triggerExecution=390, latestOffset=6),
                  p(3, 200, addBatch=200, triggerExecution=240, latestOffset=5)]
    got = batch_overhead(progresses, first_batch=1)
    assert got["batches"] == 3
    assert got["rows_per_batch"] == 200
    assert got["addBatch"] == 200 and got["triggerExecution"] == 240 and got["latestOffset"] == 5
    assert got["outside_addBatch"] == 50
    assert batch_overhead(progresses[2:3]) == {"batches": 0}


def test_python_floor_source_reads_every_row_once_across_batches():
    pytest.importorskip("pyspark")
    reader = _python_floor_source()({"rowspersecond": "20000"}).streamReader(None)
    start = reader.initialOffset()
    assert reader.initialOffset() == start  # asked twice on a fresh query: same answer
    seen = []
    for step_ms in (1, 7, 250, 3):
        end = {"ms": start["ms"] + step_ms}
        for part in reader.partitions(start, end):
            for batch in reader.read(part):
                seen.extend(batch.column("value").to_pylist())
                ts_ms = batch.column("timestamp").cast("int64").to_numpy() / 1000
                assert ((ts_ms >= start["ms"]) & (ts_ms < end["ms"])).all()
        start = end
    assert seen == list(range(seen[0], seen[0] + len(seen)))
    assert len(seen) == 20 * (1 + 7 + 250 + 3)
