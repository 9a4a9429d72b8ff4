"""The agent registry: which agent a run uses, by name (docs/events.md#agents).

Runs name their agent rather than carry it, so a run worker in another process
can build the same agent from the name (and a few plain options) it receives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from .base import Agent

#: name -> dotted path of a factory (a class) returning an Agent.
AGENTS: dict[str, str | Callable[..., Agent]] = {
    "demo": "chatui.agents.demo.DemoAgent",
    "showcase": "chatui.agents.demo.ShowcaseAgent",
    "openai": "chatui.agents.openai.OpenAIAgent",
    "webhook": "chatui.agents.webhook.WebhookAgent",
    "agui": "chatui.agents.agui.AGUIAgent",
}


def register_agent(name: str, factory: str | Callable[..., Agent]) -> None:
    AGENTS[name] = factory


def get_agent(name: str | None = None, **options: Any) -> Agent:
    """The agent named `name`, by default `settings.CHATUI_AGENT` ("demo"),
    built with `options` (keyword arguments of its factory)."""
    name = name or getattr(settings, "CHATUI_AGENT", "demo") or "demo"
    factory = AGENTS.get(name)
    if factory is None:
        raise ImproperlyConfigured(
            f"CHATUI_AGENT={name!r} is not a known agent; choose one of: {', '.join(AGENTS)}"
        )
    if isinstance(factory, str):
        factory = import_string(factory)
    return factory(**options)
