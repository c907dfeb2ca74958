"""Structured Streaming reader: checkpointed offsets, admission control, AvailableNow.

Correctness depends only on the offsets Spark checkpoints: never on ``commit()``, ``stop()``
or consumer-group commits (those are for lag monitoring only).
"""
from __future__ import annotations

import logging
import math
import time

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxRows, ReadMinRows,
                                              SupportsTriggerAvailableNow)

from connector.kafka import EARLIEST, LATEST, KafkaOffsetReader, OffsetKind
from connector.spark import _offsets as off
from connector.read import offset_reader, offset_specs
from connector.spark._batch import KafkaInputPartition, read_ranges
from connector.spark._setup import ReadSetup

__all__ = ["StreamReader"]

log = logging.getLogger("asyncapi_kafka")


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader modelled on Spark's ``KafkaMicroBatchStream``."""

    def __init__(self, setup: ReadSetup):
        self.setup = setup
        self._initial: dict | None = None
        self._target: dict | None = None       # AvailableNow snapshot {(t, p): offset}
        self._latest_seen: dict | None = None
        self._last_trigger_ms: float | None = None
        self._offset_reader: KafkaOffsetReader | None = None

    # -- driver side -------------------------------------------------------------------
    def _reader(self):
        if self._offset_reader is None:
            self._offset_reader = offset_reader(self.setup)
        return self._offset_reader

    def _partitions_now(self):
        return self._reader().partitions_for(topics=self.setup.topics or None, pattern=self.setup.topic_pattern)

    def _report(self, condition: str, message: str) -> None:
        from connector.kafka import report_data_loss

        report_data_loss(condition, message, fail_on_data_loss=self.setup.options.fail_on_data_loss, logger=log)

    def initialOffset(self) -> dict:
        # PySpark asks twice on a fresh query and starts batch 0 from the second answer:
        # resolve once. 'latest' and 'earliest' stay symbolic (-1/-2), resolved per batch.
        if self._initial is None:
            start_spec, _ = offset_specs(self.setup)
            tps = self._partitions_now()
            kind = start_spec.kind
            if kind is OffsetKind.LATEST:
                self._initial = off.to_json({tp: LATEST for tp in tps})
            elif kind is OffsetKind.EARLIEST:
                self._initial = off.to_json({tp: EARLIEST for tp in tps})
            elif kind is OffsetKind.OFFSETS:
                # Keep -1/-2 symbolic. Like Spark, the JSON must name every partition read.
                given = start_spec.as_dict()
                if set(given) != set(tps):
                    from connector.errors import ConfigError

                    raise ConfigError(
                        "If startingOffsets contains specific offsets, you must specify all "
                        "TopicPartitions. Use -1 for latest, -2 for earliest.\n"
                        f"Specified: {sorted(given)} Assigned: {sorted(tps)}")
                self._initial = off.to_json(given)
            else:
                self._initial = off.to_json(self._timestamp_start(start_spec, tps))
        return self._initial

    def _timestamp_start(self, spec, tps) -> dict:
        """A timestamp start: matched offsets are deterministic and stay concrete; partitions
        with no record at or after the timestamp (strategy ``latest``) stay symbolic -1 like a
        ``latest`` start, so a restart before batch 0 completes does not move them forward."""
        reader = self._reader()
        if spec.kind is OffsetKind.TIMESTAMP:
            return reader.by_timestamp(tps, int(spec.timestamp or 0), strategy=spec.strategy,
                                       symbolic_latest=True)
        given = spec.as_dict()
        return reader.by_timestamp([tp for tp in tps if tp in given], given, strategy=spec.strategy,
                                   symbolic_latest=True)

    def getDefaultReadLimit(self):
        # Python data sources have no composite limit: maxOffsetsPerTrigger wins and the
        # minimum is then read from the options (as Spark's own source does).
        opts = self.setup.options
        if opts.max_offsets_per_trigger:
            return ReadMaxRows(opts.max_offsets_per_trigger)
        if opts.min_offsets_per_trigger:
            return ReadMinRows(opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self._partitions_now()
        self._target = dict(self._reader().latest(tps))
        log.info("AvailableNow: reading up to %s", off.to_json(self._target))

    def latestOffset(self, start: dict, limit) -> dict:
        opts = self.setup.options
        reader = self._reader()
        tps = self._partitions_now()
        latest = dict(reader.latest(tps))
        earliest = dict(reader.earliest(tps))
        self._latest_seen = off.to_json(latest)
        if self._target is not None:
            latest = {tp: min(hi, self._target[tp]) for tp, hi in latest.items() if tp in self._target}
        start_offsets = off.from_json(start)
        begin = off.resolve_start(start_offsets, latest=latest, earliest=earliest, report=self._report)

        now_ms = time.monotonic() * 1000
        if opts.min_offsets_per_trigger and not isinstance(limit, ReadAllAvailable) and self._target is None:
            # As in Spark, the first batch of a run is never held back.
            waited = math.inf if self._last_trigger_ms is None else now_ms - self._last_trigger_ms
            if off.hold_back(start_offsets, begin, latest, min_rows=opts.min_offsets_per_trigger,
                             waited_ms=waited, max_delay_ms=opts.max_trigger_delay_ms):
                return start
            self._last_trigger_ms = now_ms
        if isinstance(limit, ReadMaxRows):
            end = off.rate_limit(begin, latest, int(limit.max_rows))
        else:
            end = latest
        # No new data: hand back `start` itself (AvailableNow ends when latest == start).
        if start_offsets == begin and all(end[tp] == begin[tp] for tp in end):
            return start
        return off.to_json(end)

    def reportLatestOffset(self):
        return self._latest_seen

    def partitions(self, start: dict, end: dict):
        reader = self._reader()
        end_offsets = off.from_json(end)
        tps = sorted(end_offsets)
        earliest = dict(reader.earliest(tps)) if tps else {}
        # Partitions deleted between `start` and `end` were reported by the latestOffset call
        # that planned `end`. Here `start` may also be a re-resolved initialOffset (batch 0 re-run
        # after a restart) naming partitions created since `end` was planned: not data loss,
        # the next batch reads them as new partitions.
        start_offsets = {tp: o for tp, o in off.from_json(start).items() if tp in end_offsets}
        begin = off.resolve_start(start_offsets, latest=end_offsets, earliest=earliest, report=self._report)
        from connector.kafka import plan_ranges

        ranges = plan_ranges(begin, end_offsets, min_partitions=self.setup.options.min_partitions,
                             max_records_per_partition=None)
        return KafkaInputPartition.packed(ranges, self.setup.options)

    def commit(self, end: dict) -> None:
        opts = self.setup.options
        group = self.setup.plan.group_id
        if not (opts.commit_offsets_to_group and group):
            return
        from connector.kafka import commit_offsets

        try:
            commit_offsets(self.setup.kafka_conf(warn=False), group, off.from_json(end))
        except Exception as e:  # noqa: BLE001 - monitoring only: never fail the query for it
            log.warning("could not commit offsets to group %s for lag monitoring: %s", group, e)

    def stop(self) -> None:
        if self._offset_reader is not None:
            self._offset_reader.close()
            self._offset_reader = None

    # -- executor side -----------------------------------------------------------------
    def read(self, partition):
        if not isinstance(partition, KafkaInputPartition):
            return
        yield from read_ranges(self.setup, partition)
