"""S4 (docs/rendering.md#s4): a run's tokens from its steps' `usage`, and its cost by
CHATUI_PRICES in the run's meta line and the audit page's run table."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from chatui.admin import timeline
from chatui.ingest.service import ingest
from chatui.ingest.values import EventError
from chatui.models import Conversation, Message
from chatui.read import presenters
from chatui.read.cost import format_cost, parse_prices, run_cost
from chatui.read.selectors import transcript_window

PRICES = {"small-model": {"input": 0.15, "output": 0.6}, "big-model": {"input": 3, "output": 15}}


def step(message_id: str, usage: dict | None = None, **fields) -> dict:
    event = {"type": "agent.step.completed", "run_id": "r1", "message_id": message_id,
             "content": "", **fields}  # fmt: skip
    if usage is not None:
        event["usage"] = usage
    return event


def answered(conversation: Conversation, *steps: dict) -> None:
    ingest(
        conversation,
        [
            {"type": "user.message", "run_id": "r1", "content": "Go"},
            *steps,
            {"type": "agent.step.completed", "run_id": "r1", "message_id": "end",
             "content": "Done."},
            {"type": "agent.status", "run_id": "r1", "status": "completed"},
        ],
    )  # fmt: skip


def meta_line(conversation: Conversation) -> str | None:
    window, _ = transcript_window(conversation)
    lines = [item.meta_line for item in presenters.present_transcript(window)
             if getattr(item, "meta_line", None)]  # fmt: skip
    assert len(lines) <= 1
    return lines[0] if lines else None


@override_settings(CHATUI_PRICES=PRICES)
def test_s4_usage_gives_the_runs_tokens_and_cost_in_the_meta_line(conversation):
    answered(
        conversation,
        step("s1", {"input_tokens": 1000, "output_tokens": 200, "model": "small-model"}),
        step("s2", {"input_tokens": 2000, "output_tokens": 800, "model": "big-model"}),
    )
    first = Message.objects.get(conversation=conversation, message_id="s1")
    assert first.metadata["tokens"] == 1200  # S4: in + out when `tokens` is not given
    # 1000×0.15 + 200×0.6 + 2000×3 + 800×15 per million = $0.01827, to the cent
    assert meta_line(conversation) == "Assistant · 4,000 tokens · $0.02"


@override_settings(CHATUI_PRICES=PRICES)
def test_s4_audit_run_table_shows_tokens_and_cost(conversation):
    answered(conversation, step("s1", {"input_tokens": 10_000_000, "output_tokens": 0,
                                        "model": "big-model"}))  # fmt: skip
    window, _ = transcript_window(conversation)
    (run,) = timeline.run_summaries(conversation, window)
    assert (run.tokens, run.cost) == ("10,000,000 tokens", "$30.00")


@override_settings(CHATUI_PRICES=PRICES)
def test_s4_no_cost_when_a_step_cannot_be_priced(conversation):
    answered(
        conversation,
        step("s1", {"input_tokens": 10, "output_tokens": 5, "model": "small-model"}),
        step("s2", {"input_tokens": 10, "output_tokens": 5, "model": "<b>unpriced</b>"}),
    )
    assert meta_line(conversation) == "Assistant · 30 tokens"  # never a partial sum
    window, _ = transcript_window(conversation)
    assert timeline.run_summaries(conversation, window)[0].cost == "—"


def test_s4_no_cost_without_prices(conversation):
    answered(conversation, step("s1", {"input_tokens": 10, "output_tokens": 5, "model": "m"}))
    assert meta_line(conversation) == "Assistant · 15 tokens"


def test_s4_tokens_win_over_usage_and_steps_without_usage_cost_nothing():
    table = parse_prices(PRICES)
    assert table["small-model"].output == Decimal("0.6")
    with override_settings(CHATUI_PRICES=PRICES):
        usage = {"input_tokens": 10**6, "output_tokens": 0, "model": "small-model"}
        assert run_cost([{"tokens": 0}, {"usage": usage}]) == Decimal("0.15")
        assert run_cost([{"tokens": 7}]) is None  # tokens without usage: unpriced
        assert run_cost([{}]) is None  # nothing used: no cost to show


def test_s4_cost_is_written_for_people():
    assert format_cost(Decimal("0.0042")) == "$0.0042"
    assert format_cost(Decimal("1204.5")) == "$1,204.50"
    assert format_cost(Decimal("0.00001")) == "<$0.0001"
    assert format_cost(Decimal(0)) == "$0.00"
    assert format_cost(None) is None


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("{not json", "is not JSON"),
        ("[1]", "must be an object"),
        ('{"m": 3}', "'m' must be"),
        ('{"m": {"input": -1}}', "input price of 'm'"),
        ('{"m": {"input": "NaN"}}', "input price of 'm'"),
        ('{"m": {"output": true}}', "output price of 'm'"),
        ('{"m": {"input": 1, "cached": 2}}', "'m' must be"),
    ],
)
def test_s4_a_bad_prices_setting_is_refused_naming_the_problem(raw, problem):
    with pytest.raises(ImproperlyConfigured, match=problem):
        parse_prices(raw)


@pytest.mark.parametrize(
    ("usage", "problem"),
    [
        ("lots", "must be an object"),
        ({"input_tokens": -1}, "input_tokens must not be negative"),
        ({"output_tokens": 1.5}, "output_tokens must be an integer"),
        ({"model": ""}, "model"),
    ],
)
def test_s4_bad_usage_is_a_400_naming_the_field(conversation, usage, problem):
    with pytest.raises(EventError) as refused:
        ingest(conversation, step("s1", usage))
    assert refused.value.status == 400 and refused.value.field == "usage"
    assert problem in str(refused.value)
    assert not Message.objects.filter(conversation=conversation).exists()
