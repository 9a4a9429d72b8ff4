"""The `/showcase` launcher: two scripted runs that together exercise every render
rule of SPEC §4 — the first completes, the second fails (S2)."""

from __future__ import annotations

from typing import Any

from ..models import Conversation
from .registry import get_agent
from .runner import launch
from .runs import RunSpec, new_run_id

SHOWCASE_OPENER = (
    "Show me everything chatui can render.\n"
    "This second line stays a second line, <b>this</b> stays text, and @everyone stays inert."
)
SHOWCASE_FAILURE_PROMPT = "And what does a failed run look like?"


def _script(text: str, run_id: str, **options: Any) -> RunSpec:
    """One scripted run: it posts its own user message."""
    return RunSpec(
        get_agent("showcase", **options),
        text,
        run_id,
        post_user_message=True,
        agent_options=options,
    )


def start_showcase(
    conversation: Conversation, *, run_id: str | None = None, delay: float | None = None
) -> str:
    """Start the two showcase runs in `conversation`; returns the first run id."""
    first = run_id or new_run_id()
    return launch(
        conversation,
        [
            _script(SHOWCASE_OPENER, first, delay=delay),
            _script(SHOWCASE_FAILURE_PROMPT, f"{first}-2", delay=delay, part="failure"),
        ],
    )
