"""chatui.live.fanout: where the viewers' sockets live, and what it relies on
(docs/SCALING.md#fan-out)."""

from __future__ import annotations

import ast
from pathlib import Path

from chatui.live import fanout

LIVE = Path(fanout.__file__).parent


def test_live_code_relies_on_no_channels_redis_internals():
    """Live delivery uses redis-py's public API only; a private reach into a library
    belongs in chatui/db/internals.py or chatui/server/, fenced by a test."""
    reaching = []
    for path in sorted(LIVE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            reaching += [f"{path.name}: {name}" for name in names if "channels_redis" in name]
    assert reaching == []


def test_viewers_sockets_are_on_the_live_layer_in_each_process(settings):
    assert fanout.live_alias() == "live"
    assert type(fanout.live_layer()).__name__ == "InMemoryChannelLayer"


def test_a_host_project_with_only_a_default_layer_keeps_its_sockets_there(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    assert fanout.live_alias() == "default"
