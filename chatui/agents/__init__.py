"""Agent runs and backends (docs/events.md#agents): demo, openai, webhook.

The composer view calls `start_run` / `stop_run`; `accepts_input` and
`is_running` tell it whether the composer may send. See `runner` for how runs
are driven, `registry` for the agents by name, `showcase` for `/showcase`,
`dispatch` and `worker` for runs in run workers (cluster mode), and `base` for
the protocol an agent implements.
"""

from .base import Agent, AgentError, RunContext, RunInProgress
from .registry import AGENTS, get_agent, register_agent
from .runner import (
    STOPPED_BY_USER,
    accepts_input,
    current_run_id,
    is_running,
    start_run,
    stop_run,
    wait_for_run,
)
from .showcase import start_showcase

__all__ = [
    "AGENTS",
    "STOPPED_BY_USER",
    "Agent",
    "AgentError",
    "RunContext",
    "RunInProgress",
    "accepts_input",
    "current_run_id",
    "get_agent",
    "is_running",
    "register_agent",
    "start_run",
    "start_showcase",
    "stop_run",
    "wait_for_run",
]
