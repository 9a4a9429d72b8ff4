"""The `/showcase` launcher: three scripted runs that together exercise every render
rule of docs/rendering.md#render-rules — the first completes, the second fails on purpose (S2's
banner, kept in the history), and a short third one completes, so a finished showcase's
conversation ends as its latest run did: completed, not "Failed" (issue 15)."""

from __future__ import annotations

from typing import Any

from chatui.models import Conversation

from .registry import get_agent
from .runner import launch
from .runs import RunSpec, new_run_id

SHOWCASE_OPENER = (
    "Show me everything chatui can render.\n"
    "This second line stays a second line, <b>this</b> stays text, and @everyone stays inert."
)
SHOWCASE_FAILURE_PROMPT = "And what does a failed run look like?"
SHOWCASE_CLOSING_PROMPT = "Thanks — that's all."


def _script(text: str, run_id: str, *, fails_on_purpose: bool = False, **options: Any) -> RunSpec:
    """One scripted run: it posts its own user message."""
    return RunSpec(
        get_agent("showcase", **options),
        text,
        run_id,
        post_user_message=True,
        agent_options=options,
        fails_on_purpose=fails_on_purpose,
    )


def start_showcase(
    conversation: Conversation, *, run_id: str | None = None, delay: float | None = None
) -> str:
    """Start the three showcase runs in `conversation`; returns the first run id."""
    first = run_id or new_run_id()
    return launch(
        conversation,
        [
            _script(SHOWCASE_OPENER, first, delay=delay),
            _script(
                SHOWCASE_FAILURE_PROMPT,
                f"{first}-2",
                delay=delay,
                part="failure",
                fails_on_purpose=True,
            ),
            _script(SHOWCASE_CLOSING_PROMPT, f"{first}-3", delay=delay, part="closing"),
        ],
    )
