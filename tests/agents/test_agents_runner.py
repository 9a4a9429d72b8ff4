"""Runs (docs/events.md#agents, docs/rendering.md#composer): start, stop, refuse while busy,
interjections, failures, registry.

Runs are real asyncio tasks on a loop started by the test; their events go
through `ingest` in the worker thread (hence transactional test databases).
The small agents defined here are agents like any other (the protocol is
public), used where a test needs to hold a run open at a known point.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured

from chatui.agents import (
    AgentError,
    RunInProgress,
    accepts_input,
    current_run_id,
    get_agent,
    is_running,
    register_agent,
    start_run,
    stop_run,
    wait_for_run,
)
from chatui.agents.demo import DemoAgent
from chatui.agents.openai import OpenAIAgent
from chatui.agents.registry import AGENTS
from chatui.agents.runner import launch
from chatui.agents.runs import RunSpec
from chatui.agents.tools import Tool, Toolbox, params
from chatui.agents.webhook import WebhookAgent
from chatui.ingest.service import ingest
from chatui.models import Conversation, Event, Message, Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user(db):
    """conftest's user without the (deliberately slow) password hashing."""
    return get_user_model().objects.create(username="alice")


class Echo:
    """Streams the user's words back."""

    name = "echo"
    accepts_interjections = False

    async def run(self, ctx):
        turn = ctx.assistant()
        await turn.stream(ctx.user_text, words_per_chunk=1)
        await turn.complete(tokens=3)


class Gate:
    """Works until the test opens the gate; then reports what it was told meanwhile."""

    name = "gate"

    def __init__(self, accepts_interjections: bool, listens: bool = True):
        self.accepts_interjections = accepts_interjections
        self.listens = listens
        self.opened = asyncio.Event()
        self.inside = asyncio.Event()

    async def run(self, ctx):
        await ctx.thinking()
        self.inside.set()
        await self.opened.wait()
        turn = ctx.assistant()
        heard = ctx.take_interjections() if self.listens else []
        await turn.delta(" | ".join([ctx.user_text, *heard]))
        await turn.complete()


class Raises:
    name = "raises"
    accepts_interjections = False

    def __init__(self, error: Exception):
        self.error = error

    async def run(self, ctx):
        await ctx.thinking()
        raise self.error


class LongTool:
    """Calls one tool whose body works (on its worker thread) until released."""

    name = "long-tool"
    accepts_interjections = False

    def __init__(self):
        self.inside = threading.Event()
        self.release = threading.Event()
        self.toolbox = Toolbox(tools=[Tool("crunch", "A long job.", params(), self.crunch)])

    def crunch(self, env):
        self.inside.set()
        self.release.wait(10)
        return "finished"

    async def run(self, ctx):
        step = ctx.assistant()
        call = self.toolbox.call(ctx, "crunch", {})
        await step.complete("Crunching.", tool_calls=[call])
        await self.toolbox.execute(call)
        turn = ctx.assistant()
        await turn.complete("All done.")


def log_of(conversation) -> list[Event]:
    return list(Event.objects.filter(conversation=conversation).order_by("seq"))


count_events = sync_to_async(
    lambda conversation: Event.objects.filter(conversation=conversation).count()
)
count_progress = sync_to_async(
    lambda conversation: Event.objects.filter(
        conversation=conversation, type="agent.tool.progress"
    ).count()
)


def test_a_sync_view_under_asgi_starts_its_run_on_the_servers_loop(conversation):
    """Django runs a sync view through sync_to_async: the run joins that loop."""

    def sync_view() -> str:
        return start_run(conversation, "one two", agent=Echo())

    async def server():
        run_id = await sync_to_async(sync_view)()
        assert is_running(conversation.pk)
        task = next(t for t in asyncio.all_tasks() if t.get_name() == f"chatui-run-{run_id}")
        assert task.get_loop() is asyncio.get_running_loop()
        await wait_for_run(conversation.pk, timeout=10)
        return run_id

    run_id = asyncio.run(server())
    assert Run.objects.get(run_id=run_id).status == "completed"


def conversation_status(conversation) -> str:
    return Conversation.objects.get(pk=conversation.pk).status


def test_runs_started_from_sync_code_live_on_the_runners_own_loop(conversation):
    """A sync caller (sync view, test client, command) has no loop to lend."""
    busy = DemoAgent(delay=0.05)
    busy.accepts_interjections = False
    run_id = start_run(conversation, "run something slow", agent=busy)
    assert is_running(conversation.pk)
    with pytest.raises(RunInProgress):
        start_run(conversation, "again", agent=Echo())
    for _ in range(300):  # read through the runs' worker thread, as the other tests do
        if asyncio.run(count_progress(conversation)):
            break
        time.sleep(0.01)
    # what a sync view does: async_to_sync on a loop of its own
    assert async_to_sync(stop_run)(conversation.pk) == run_id
    assert Run.objects.get(run_id=run_id).status == "cancelled"  # W5
    second = start_run(conversation, "bye", agent=Echo())
    assert asyncio.run(wait_for_run(conversation.pk, timeout=10))  # from another loop
    assert Run.objects.get(run_id=second).status == "completed"


def test_a_run_starts_running_ends_completed_and_uses_deterministic_ids(conversation):
    async def main():
        run_id = start_run(conversation, "one two three", agent=Echo(), run_id="run_echo")
        assert is_running(conversation.pk) and current_run_id(conversation.pk) == run_id
        assert await wait_for_run(conversation.pk, timeout=10)
        assert not is_running(conversation.pk) and current_run_id(conversation.pk) is None
        return run_id

    assert asyncio.run(main()) == "run_echo"
    log = log_of(conversation)
    assert [(e.type, e.payload.get("status")) for e in log] == [
        ("agent.status", "running"),
        *[("agent.message.delta", None)] * 3,  # "one", " two", " three"
        ("agent.step.completed", None),
        ("agent.status", "completed"),
    ]
    assert [e.event_id for e in log] == [f"run_echo.e{n}" for n in range(1, 7)]
    assert {e.run_id for e in log} == {"run_echo"}
    (message,) = Message.objects.filter(conversation=conversation)
    assert message.message_id == "run_echo.m1" and message.content == "one two three"
    assert message.metadata["tokens"] == 3 and message.metadata["duration_ms"] >= 0
    assert Run.objects.get(run_id="run_echo").status == "completed"


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (AgentError("The model quota is used up."), "The model quota is used up."),
        (ValueError("boom"), "The agent crashed: ValueError: boom"),
    ],
)
def test_errors_and_crashes_become_failed_runs(conversation, caplog, error, message):
    async def main():
        start_run(conversation, "hi", agent=Raises(error), run_id="run_bad")
        await wait_for_run(conversation.pk, timeout=10)

    with caplog.at_level(logging.INFO, logger="chatui.agents.runner"):
        asyncio.run(main())
    run = Run.objects.get(run_id="run_bad")
    assert run.status == "failed" and run.error_message == message
    last = log_of(conversation)[-1]
    assert last.payload == {"status": "failed", "error_message": message}
    banner = Message.objects.get(conversation=conversation, status_type="error")
    assert banner.content == message  # S2
    assert not Message.objects.filter(status_type="thinking").exists()  # S3
    assert "run_bad" in caplog.text


def test_w5_stop_mid_run_ends_it_cancelled_not_failed_and_nothing_follows(conversation):
    async def main():
        run_id = start_run(conversation, "run something slow", agent=DemoAgent(delay=0.05))
        for _ in range(200):
            if await count_progress(conversation):
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the slow task never reported progress")
        assert await stop_run(conversation.pk) == run_id
        assert not is_running(conversation.pk)
        settled = await count_events(conversation)
        await asyncio.sleep(0.3)
        assert await count_events(conversation) == settled  # no further events
        assert await stop_run(conversation.pk) is None  # nothing left to stop
        return run_id

    run_id = asyncio.run(main())
    log = log_of(conversation)
    assert log[-1].type == "agent.status"
    assert log[-1].payload == {"status": "cancelled"}
    run = Run.objects.get(run_id=run_id)
    assert (run.status, run.error_message) == ("cancelled", "")
    assert conversation_status(conversation) == "cancelled"
    (slow,) = Message.objects.filter(conversation=conversation, role="tool")
    # Not an error, and no endless ⏳: never ran to an end.
    assert (slow.tool_status, slow.content) == ("cancelled", "")
    # No red banner (S2), one muted line that stays.
    assert not Message.objects.filter(conversation=conversation, status_type="error").exists()
    assert list(
        Message.objects.filter(conversation=conversation, role="status").values_list(
            "status_type", "content"
        )
    ) == [("continuation", "Stopped by you")]
    assert not Message.objects.filter(conversation=conversation, content__startswith="Here is")


def test_runs_after_one_that_fails_on_purpose_still_play(conversation):
    """The showcase's S2 run fails on purpose; the closing run after it still plays."""

    async def main():
        launch(
            conversation,
            [
                RunSpec(Raises(AgentError("on purpose")), "a", "r1", fails_on_purpose=True),
                RunSpec(Echo(), "b", "r2"),
            ],
        )
        assert await wait_for_run(conversation.pk, timeout=10)

    asyncio.run(main())
    runs = Run.objects.filter(conversation=conversation).order_by("started_seq")
    assert [(r.run_id, r.status) for r in runs] == [("r1", "failed"), ("r2", "completed")]


def test_a_run_that_fails_on_purpose_says_so_through_the_run_queue():
    """A run worker builds the showcase's runs from plain data: the flag goes along."""
    spec = RunSpec(
        get_agent("showcase", part="failure"),
        "a",
        "r1",
        post_user_message=True,
        agent_options={"part": "failure"},
        fails_on_purpose=True,
    )
    again = RunSpec.from_message(spec.to_message())
    assert again.fails_on_purpose and again.agent.part == "failure"
    plain = RunSpec(get_agent("demo"), "b", "r2")
    assert not RunSpec.from_message(plain.to_message()).fails_on_purpose


def test_a_stop_during_a_run_that_fails_on_purpose_ends_the_runs_after_it(conversation):
    gate = Gate(accepts_interjections=False)

    async def main():
        launch(
            conversation,
            [RunSpec(gate, "a", "r1", fails_on_purpose=True), RunSpec(Echo(), "b", "r2")],
        )
        await asyncio.wait_for(gate.inside.wait(), timeout=10)
        assert await stop_run(conversation.pk) == "r1"
        assert not is_running(conversation.pk)

    asyncio.run(main())
    assert list(Run.objects.filter(conversation=conversation).values_list("run_id", "status")) == [
        ("r1", "cancelled")  # W5: stopped, not failed
    ]


def test_w5_stop_during_a_long_tool_ends_the_run_at_once_cancelled(conversation):
    """The tool's work runs off the loop, so Stop is served while it works, and the
    run stops awaiting it at once (the worker finishes on its own, unheard)."""
    agent = LongTool()

    async def main():
        run_id = start_run(conversation, "crunch", agent=agent)
        for _ in range(500):
            if agent.inside.is_set():
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the tool never started")
        try:
            assert await stop_run(conversation.pk) == run_id
            assert not is_running(conversation.pk)
            assert not agent.release.is_set()  # stopped while the tool still worked
        finally:
            agent.release.set()
        return run_id

    run_id = asyncio.run(main())
    run = Run.objects.get(run_id=run_id)
    assert (run.status, run.error_message) == ("cancelled", "")
    crunch = Message.objects.get(conversation=conversation, role="tool")
    assert (crunch.tool_status, crunch.content) == ("cancelled", "")
    assert not Message.objects.filter(conversation=conversation, content="All done.").exists()


def test_a_busy_run_refuses_new_messages_when_the_agent_takes_no_interjections(conversation):
    gate = Gate(accepts_interjections=False)

    async def main():
        run_id = start_run(conversation, "first", agent=gate)
        await gate.inside.wait()
        assert not accepts_input(conversation.pk)
        with pytest.raises(RunInProgress) as refused:
            start_run(conversation, "second", agent=Echo())
        assert refused.value.run_id == run_id and "Stop" in str(refused.value)
        gate.opened.set()
        await wait_for_run(conversation.pk, timeout=10)
        assert accepts_input(conversation.pk)
        return start_run(conversation, "third", agent=Echo()), await wait_for_run(conversation.pk)

    second_run, _ = asyncio.run(main())
    assert [r.status for r in Run.objects.order_by("started_seq")] == ["completed", "completed"]
    assert Message.objects.filter(run_id=second_run, content="third").exists()


def test_interjections_reach_a_running_agent_that_accepts_them(conversation):
    gate = Gate(accepts_interjections=True)

    async def main():
        run_id = start_run(conversation, "first", agent=gate)
        assert start_run(conversation, "early", agent=Echo()) == run_id  # before run() began
        await gate.inside.wait()
        assert accepts_input(conversation.pk)
        assert start_run(conversation, "second", agent=Echo()) == run_id
        gate.opened.set()
        await wait_for_run(conversation.pk, timeout=10)

    asyncio.run(main())
    (answer,) = Message.objects.filter(conversation=conversation, role="assistant")
    assert answer.content == "first | early | second"
    assert Run.objects.count() == 1


def test_messages_the_agent_never_took_get_a_follow_up_run(conversation):
    gate = Gate(accepts_interjections=True, listens=False)

    async def main():
        run_id = start_run(conversation, "first", agent=gate, run_id="run_a")
        await gate.inside.wait()
        start_run(conversation, "second", agent=Echo())
        start_run(conversation, "third", agent=Echo())
        gate.opened.set()
        await wait_for_run(conversation.pk, timeout=10)
        return run_id

    asyncio.run(main())
    runs = [(r.run_id, r.status) for r in Run.objects.order_by("started_seq")]
    assert runs == [("run_a", "completed"), ("run_a-f1", "completed")]
    answers = Message.objects.filter(conversation=conversation, role="assistant")
    assert [m.content for m in answers] == ["first", "second\n\nthird"]


def test_the_demo_folds_interjections_into_its_answer(conversation):
    async def main():
        run_id = start_run(conversation, "run something slow", agent=DemoAgent(delay=0.03))
        for _ in range(200):
            if await count_progress(conversation):
                break
            await asyncio.sleep(0.01)
        assert start_run(conversation, "also say hello", agent=DemoAgent(delay=0)) == run_id
        await wait_for_run(conversation.pk, timeout=10)

    asyncio.run(main())
    answer = Message.objects.filter(conversation=conversation, role="assistant").last()
    assert "> also say hello" in answer.content
    infos = [
        e.payload["message"]
        for e in log_of(conversation)
        if e.type == "agent.status" and e.payload["status"] == "info"
    ]
    assert "Noted while working: also say hello" in infos


def test_w5_stop_ends_a_run_no_task_of_this_process_holds_cancelled(conversation):
    ingest(
        conversation,
        [
            {"type": "agent.status", "status": "running", "run_id": "run_elsewhere"},
            {
                "type": "agent.step.completed",
                "content": "",
                "run_id": "run_elsewhere",
                "tool_calls": [{"id": "c1", "name": "a"}, {"id": "c2", "name": "b"}],
            },
            {"type": "agent.tool.started", "tool_call_id": "c1", "tool_name": "a",
             "run_id": "run_elsewhere"},
        ],
    )  # fmt: skip
    assert asyncio.run(stop_run(conversation.pk)) == "run_elsewhere"
    run = Run.objects.get(run_id="run_elsewhere")
    assert (run.status, run.error_message) == ("cancelled", "")
    statuses = dict(
        Message.objects.filter(conversation=conversation, role="tool").values_list(
            "tool_call_id", "tool_status"
        )
    )
    assert statuses == {"c1": "cancelled", "c2": "cancelled"}
    assert asyncio.run(stop_run(conversation.pk)) is None
    assert log_of(conversation)[-1].event_id == "run_elsewhere.stop.1"


def test_the_agent_is_chosen_by_the_setting(settings):
    assert isinstance(get_agent(), DemoAgent)  # the default
    settings.CHATUI_AGENT = "webhook"
    assert isinstance(get_agent(), WebhookAgent)
    settings.CHATUI_AGENT = "openai"
    assert isinstance(get_agent(), OpenAIAgent)
    settings.CHATUI_AGENT = "nope"
    with pytest.raises(ImproperlyConfigured, match="demo, showcase, openai, webhook"):
        get_agent()
    register_agent("echo", Echo)
    try:
        settings.CHATUI_AGENT = "echo"
        assert isinstance(get_agent(), Echo)
    finally:
        AGENTS.pop("echo")
    assert DemoAgent.accepts_interjections and not WebhookAgent.accepts_interjections
