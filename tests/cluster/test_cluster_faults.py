"""Cluster mode under fire, the short run (docs/SCALING.md#cluster-under-fire;
bench/cluster_faults.py is the full one).

2 web processes and a run worker on PostgreSQL + Redis, viewers spread over 10
conversations, writers posting in batches of 10 for 60 s; one web process SIGKILLed at
15 s, Redis shut down at 35 s and started 5 s later. Every acknowledged event is in the
log exactly once, without seq gaps; no request answers 5xx; every viewer catches up
after each fault; each process logs the outage in one line and its end in one, no
traceback. How fast the viewers catch up is printed, not asserted (a loaded CI machine
is no place for a speed claim): docs/SCALING.md has the figures of the full run.
"""

from __future__ import annotations

import pytest

from bench import cluster_faults

SHORT_RUN = ["--seconds", "60", "--viewers", "60", "--rate", "100"]
SHORT_RUN += ["--kill-at", "15", "--redis-at", "35", "--redis-down", "5"]


@pytest.mark.timeout(900)
def test_cluster_keeps_its_promises_with_a_process_killed_and_redis_restarted():
    result = cluster_faults.main(SHORT_RUN)  # prints its figures (pytest -s shows them)
    figures = result.figures
    assert figures["acked"] > 0
    assert (figures["lost"], figures["duplicated"], figures["gaps"]) == (0, 0, 0), figures
    assert figures["logged"] == figures["acked"], figures
    assert result.status_5xx == 0
    assert not any(result.never_current.values()), result.never_current
    assert result.log_lines["Traceback"] == 0, result.log_lines
    # One line per process that noticed (2 web processes and the run worker), and its end.
    assert 1 <= result.log_lines["layer unreachable"] <= 3, result.log_lines
    assert result.log_lines["layer back"] == result.log_lines["layer unreachable"]
