"""R3: what of an assistant message is shown (docs/rendering.md#r3).

The projection indexes what is shown for search and the page presents it: both ask here,
so a hidden message is never found by words no reader can see.
"""

from __future__ import annotations

from chatui.models import Message


def should_render_assistant_content(message: Message) -> bool:
    """Seed 000's rule, verbatim: with tool_calls, content must be prose."""
    if not (message.metadata or {}).get("tool_calls"):
        return True
    content = message.content.strip()
    return content != "" and not content.startswith(("{", "["))


def is_assistant_shown(message: Message) -> bool:
    """R3 plus two guards: blank text shows nothing, and streaming text that starts
    like JSON is held back (it may turn out to be tool args; tool_calls are only
    known when the step completes)."""
    content = message.content.strip()
    if not content:
        return False
    if not message.is_final and content.startswith(("{", "[")):
        return False
    return should_render_assistant_content(message)


def shows_reasoning(message: Message) -> bool:
    """R6 (docs/rendering.md#r6): the message carries the model's reasoning (or says it
    reasoned, encrypted): its block shows, and like shown text it ends a tool batch."""
    meta = message.metadata or {}
    reasoning = meta.get("reasoning")
    return isinstance(reasoning, str) and (
        bool(reasoning.strip()) or bool(meta.get("reasoning_encrypted"))
    )
