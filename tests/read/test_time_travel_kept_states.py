"""Issue 28: a moment is projected forward from a state the process kept (a checkpoint,
or the scratch database of the last moment asked), not from the first event — and is
exactly the moment projected from the first event. Kept states are shared by threads
(daphne serves each request on a thread of its own), dropped when the conversation is
re-projected or deleted, and held within their memory budget; a process projects at
most CHATUI_MOMENT_WORKERS moments at once and says 503 + Retry-After beyond that.

The reference for "exactly" is the same moment with nothing kept (the budget 0): the
whole prefix applied in one batch, as before issue 28 — on SQLite to an empty scratch
database, on PostgreSQL in its own tables in a rolled-back transaction. Kept states
are SQLite databases on both: on PostgreSQL these tests are what shows a moment
projected there is the one PostgreSQL's own rows give.
"""

from __future__ import annotations

import random
import re
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connections
from django.test import Client

from chatui.ingest.projection import Projector
from chatui.ingest.service import ingest, reproject
from chatui.models import Conversation, Event, Message, Run
from chatui.read import replay
from tests.support.fixtures import load_fixture
from tests.support.moments import moment_slot_held
from tests.support.showcase import showcase_events

START = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def generated_log(rng: random.Random, runs: int = 6) -> list[dict[str, Any]]:
    """A conversation of `runs` random runs — streamed text, tool batches (some calls
    queued without an id, progress logged before its tool started, tools never ended),
    approvals granted, denied and decided after the run, ephemeral statuses, runs that
    end completed, failed or not at all (S3 reconciliation, T2) — then the showcase and
    an AgentSpine session (messages opened and closed by events the projector reads
    back from the log)."""
    events: list[dict[str, Any]] = []
    for r in range(runs):
        run = f"r{r}"
        events += [
            {"type": "user.message", "run_id": run, "content": f"Task {r}: check the parser."},
            {"type": "agent.status", "run_id": run, "status": "running"},
        ]
        for step in range(rng.randint(1, 3)):
            message_id = f"{run}-s{step}"
            events.append({"type": "agent.status", "run_id": run, "status": "thinking"})
            for word in rng.sample(["Let ", "me ", "look ", "at ", "it. "], rng.randint(0, 4)):
                events.append(
                    {"type": "agent.message.delta", "run_id": run, "message_id": message_id,
                     "delta": word}
                )  # fmt: skip
            calls = [
                {"id": f"{message_id}-t{n}", "name": rng.choice(["read_file", "run_cmd"]),
                 "args": {"path": f"m{n}.py"}}
                for n in range(rng.randint(0, 3))
            ]  # fmt: skip
            if rng.random() < 0.3:
                calls.append({"name": "grep", "args": {"q": "x"}})  # queued without an id
            events.append(
                {"type": "agent.step.completed", "run_id": run, "message_id": message_id,
                 "content": rng.choice(["", "Reading the code.", "**Checking** `a.py`"]),
                 "tool_calls": calls, "tokens": 10}
            )  # fmt: skip
            for call in [c for c in calls if "id" in c]:
                call_id = call["id"]
                if rng.random() < 0.3:  # progress logged before its tool started
                    events.append(
                        {"type": "agent.tool.progress", "run_id": run, "tool_call_id": call_id,
                         "output": "early\n", "progress": 0.1}
                    )  # fmt: skip
                if rng.random() < 0.25:
                    events.append(
                        {"type": "agent.tool.approval_requested", "run_id": run,
                         "tool_call_id": call_id, "tool_name": call["name"], "reason": "risky"}
                    )  # fmt: skip
                    if rng.random() < 0.7:
                        decision = rng.choice(["approved", "denied"])
                        events.append(
                            {"type": "tool.approval", "run_id": run, "tool_call_id": call_id,
                             "decision": decision, "decided_by": "alice"}
                        )  # fmt: skip
                        if decision == "denied":
                            continue
                events.append(
                    {"type": "agent.tool.started", "run_id": run, "tool_call_id": call_id,
                     "tool_name": call["name"], "args": call["args"]}
                )  # fmt: skip
                events.append(
                    {"type": "agent.tool.progress", "run_id": run, "tool_call_id": call_id,
                     "output": "line\n", "progress": 0.5}
                )  # fmt: skip
                ending = rng.random()
                if ending < 0.6:
                    events.append(
                        {"type": "agent.tool.completed", "run_id": run, "tool_call_id": call_id,
                         "result": "42 lines", "duration_ms": 20}
                    )  # fmt: skip
                elif ending < 0.8:
                    events.append(
                        {"type": "agent.tool.completed", "run_id": run, "tool_call_id": call_id,
                         "error": "exit code 2"}
                    )  # fmt: skip
            if rng.random() < 0.3:
                events.append(
                    {"type": "agent.status", "run_id": run, "status": "info", "message": "halfway"}
                )  # fmt: skip
        end = rng.random()
        if end < 0.5:
            events.append({"type": "agent.status", "run_id": run, "status": "completed"})
        elif end < 0.8:
            events.append(
                {"type": "agent.status", "run_id": run, "status": "failed", "error_message": "no"}
            )
    events += showcase_events()
    events += load_fixture("agentspine/as3_progress_long_result.jsonl")
    for n, event in enumerate(events):
        event["timestamp"] = (START + timedelta(seconds=n)).isoformat()
    return events


TRANSCRIPT = re.compile(r'<section id="transcript".*?</section>', re.S)
DOM_ID = re.compile(r'(?<=["#])([mb])-(\d+)(?=["-])')


def page(client: Client, conversation: Conversation, seq: int) -> str:
    """The whole `?at=` page, with only the DOM ids of messages the log later removed
    (numbered after the newest live message, from the scratch row's pk, which depends
    on how the prefix was cut into batches) replaced by their order of appearance."""
    response = client.get(conversation.get_absolute_url(), {"at": seq})
    assert response.status_code == 200
    html = response.content.decode()
    newest = Message.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    removed: dict[str, int] = {}

    def number(found: re.Match) -> str:
        if int(found[2]) <= newest:
            return found[0]
        return f"{found[1]}-removed{removed.setdefault(found[2], len(removed))}"

    html = DOM_ID.sub(number, html)
    # What differs per response whatever the moment: the masked CSRF token, CSP nonces.
    html = re.sub(r'("X-CSRFToken": |name="csrfmiddlewaretoken" value=)"[^"]+"', r'\1""', html)
    return re.sub(r'nonce="[^"]+"', 'nonce=""', html)


@pytest.fixture
def fresh_kept():
    replay.kept.clear()
    yield replay.kept
    replay.kept.clear()


@pytest.fixture
def small_grid(monkeypatch):
    """Checkpoints every 16 events, a trail of a savepoint every 2 events over the last
    6 before the seq asked, 12 at most: a conversation of a few hundred events crosses
    many of them."""
    monkeypatch.setattr(replay, "CHECKPOINT_EVERY", 16)
    monkeypatch.setattr(replay, "TRAIL_STEP", 2)
    monkeypatch.setattr(replay, "TRAIL_SPAN", 6)
    monkeypatch.setattr(replay, "TRAIL_MAX", 12)


def afresh(client: Client, conversation: Conversation, seq: int, settings) -> str:
    """The moment with nothing kept: the whole prefix in one batch from an empty scratch."""
    budget = settings.CHATUI_MOMENT_CACHE_MB
    settings.CHATUI_MOMENT_CACHE_MB = 0
    try:
        return page(client, conversation, seq)
    finally:
        settings.CHATUI_MOMENT_CACHE_MB = budget


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_issue28_a_moment_from_kept_states_is_the_moment_projected_afresh(
    user, seed, settings, fresh_kept, small_grid
):
    """Random walks over a generated conversation — jumps anywhere, steps of ±1 and
    ±10, the same seq twice — each page equals the one projected from the first event."""
    rng = random.Random(seed)
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(rng))
    last = conversation.last_seq
    client = Client()
    client.force_login(user)
    reference: dict[int, str] = {}
    seq = rng.randint(1, last)
    starts = set()
    for _ in range(30):
        move = rng.random()
        if move < 0.3:
            seq = rng.randint(0, last)
        else:
            seq = min(last, max(0, seq + rng.choice([1, -1, 10, -10, 0])))
        if seq not in reference:
            reference[seq] = afresh(client, conversation, seq, settings)
        assert page(client, conversation, seq) == reference[seq], f"seed {seed}, at {seq}"
        if seq:
            starts.add(replay.moment(conversation, seq).projected_from)
    assert starts - {0}, "no moment was projected from a kept state"


def test_issue28_the_generated_conversation_exercises_what_it_means_to(user):
    """The comparison above is only as good as the log: it reaches the projector's
    reads of the log and the run ends."""
    events = generated_log(random.Random(1))
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, events)
    types = set(Event.objects.filter(conversation=conversation).values_list("type", flat=True))
    assert {"agent.tool.progress", "agentspine.message_start", "agentspine.message_end"} <= types
    assert {"agent.tool.approval_requested", "tool.approval", "agent.message.delta"} <= types
    statuses = {event.get("status") for event in events if event["type"] == "agent.status"}
    assert {"completed", "failed", "thinking", "info"} <= statuses


def test_issue28_the_kept_states_hold_the_log_the_projector_reads_back(user, fresh_kept):
    """A scratch database holds, of the log, only the events the projector reads back:
    the rest would double every checkpoint and cost as much to copy as to project."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(random.Random(4)))
    replay.moment(conversation, conversation.last_seq)
    [(_rebuilds, _seq, is_held)] = replay.kept.seqs(conversation.pk)
    assert is_held
    _start, held = replay.kept.take(
        (connections["default"].settings_dict["NAME"], conversation.pk, 0), conversation.last_seq
    )
    with replay._scratch_database(held.database):
        copied = set(Event.objects.values_list("type", flat=True))
        searchable = Message.objects.count()
    held.close()
    assert copied == {"agent.tool.progress", "agentspine.message_start", "agentspine.message_end"}
    assert searchable > 0


def applied_events(monkeypatch) -> list[int]:
    """The seqs the projector applies from now on (a spy that calls through)."""
    applied: list[int] = []
    apply = Projector.apply

    def counting(self, event):
        applied.append(event.seq)
        return apply(self, event)

    monkeypatch.setattr(Projector, "apply", counting)
    return applied


def in_a_thread_of_its_own(work):
    """As daphne serves a request: on a new thread, with its own database connection."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = work()
        except BaseException as error:  # re-raised in the test's thread
            result["error"] = error
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


@pytest.mark.django_db(transaction=True)
def test_issue28_a_step_on_another_thread_applies_only_the_events_since(
    user, monkeypatch, fresh_kept
):
    """The player's next step comes on another thread (daphne: one per request): it
    carries the last moment forward instead of projecting the prefix again."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(random.Random(5)))
    seq = conversation.last_seq - 20
    client = Client()
    client.force_login(user)
    in_a_thread_of_its_own(lambda: client.get(f"/c/{conversation.pk}/at/{seq}"))
    applied = applied_events(monkeypatch)
    for step in (10, 20):
        path = f"/c/{conversation.pk}/at/{seq + step}"
        response = in_a_thread_of_its_own(lambda path=path: client.get(path))
        assert response.status_code == 200
    assert applied == list(range(seq + 1, seq + 21))


def test_issue28_a_step_back_on_the_trail_projects_nothing(
    user, monkeypatch, fresh_kept, small_grid
):
    """A moment leaves a savepoint every TRAIL_STEP events over the TRAIL_SPAN before it:
    the steps back that land there are rollbacks (no event projected, no image
    restored), a step between two of them projects only the events past the one below."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(random.Random(6)))
    seq = conversation.last_seq - 3
    replay.moment(conversation, seq)
    applied = applied_events(monkeypatch)
    for back in range(seq - replay.TRAIL_STEP, seq - replay.TRAIL_SPAN - 1, -replay.TRAIL_STEP):
        assert replay.moment(conversation, back).projected_from == back
    assert applied == []
    between = seq - replay.TRAIL_SPAN + 1
    assert replay.moment(conversation, between).projected_from == between - 1
    assert applied == [between]


def test_issue28_the_players_steps_back_retrace_its_steps_forward(
    user, monkeypatch, fresh_kept, small_grid
):
    """Each step forward applies the events since the last and leaves a savepoint: going
    back over them projects nothing."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(random.Random(12)))
    seq = conversation.last_seq // 2
    replay.moment(conversation, seq)
    applied = applied_events(monkeypatch)
    forward = [seq + 3 * n for n in range(1, 4)]
    for step in forward:
        replay.moment(conversation, step)
    assert applied == list(range(seq + 1, forward[-1] + 1))
    applied.clear()
    for step in [*reversed(forward[:-1]), seq]:
        assert replay.moment(conversation, step).projected_from == step
    assert applied == []


def test_issue28_a_step_back_past_the_trail_starts_from_a_checkpoint(
    user, monkeypatch, fresh_kept, small_grid
):
    """Below its trail, a moment starts from the checkpoint at or before it (at most
    CHECKPOINT_EVERY events back), not from the first event."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(random.Random(6)))
    seq = conversation.last_seq - 3
    replay.moment(conversation, seq)
    applied = applied_events(monkeypatch)
    target = seq - replay.TRAIL_SPAN - 1
    back = replay.moment(conversation, target)
    assert 0 < target - back.projected_from <= replay.CHECKPOINT_EVERY
    assert applied == list(range(back.projected_from + 1, target + 1))


def test_issue28_a_reprojected_conversation_is_never_served_its_old_states(user, fresh_kept):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(random.Random(7)))
    seq = conversation.last_seq // 2
    replay.moment(conversation, seq)
    assert {rebuilds for rebuilds, _seq, _held in replay.kept.seqs(conversation.pk)} == {0}
    reproject(conversation)
    again = replay.moment(conversation, seq + 1)
    assert again.projected_from == 0  # not carried forward from the old rows' state
    assert {rebuilds for rebuilds, _seq, _held in replay.kept.seqs(conversation.pk)} == {1}


def test_issue28_a_deleted_conversations_states_are_dropped(user, fresh_kept):
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(random.Random(8)))
    pk = conversation.pk
    replay.moment(conversation, conversation.last_seq)
    assert replay.kept.seqs(pk)
    conversation.delete()
    assert replay.kept.seqs(pk) == []


def test_issue28_kept_states_stay_within_the_memory_budget(user, settings, fresh_kept, small_grid):
    """Walking a conversation keeps at most CHATUI_MOMENT_CACHE_MB, least recently used
    going first; what is dropped is projected again when asked."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(random.Random(9), runs=10))
    # Room for about one held database (an empty one is ~330 KB: the app's whole schema).
    settings.CHATUI_MOMENT_CACHE_MB = 0.6
    budget = 0.6 * 1024 * 1024
    for seq in range(conversation.last_seq, 5, -7):  # backwards: a checkpoint each step
        replay.moment(conversation, seq)
        assert replay.kept.size <= budget
        held = [kept_seq for _r, kept_seq, is_held in replay.kept.seqs(conversation.pk) if is_held]
        assert seq in held and len(held) <= replay.HELD_PER_CONVERSATION
    checkpoints = [n for _r, n, is_held in replay.kept.seqs(conversation.pk) if not is_held]
    assert len(checkpoints) < conversation.last_seq // 16  # not every one made on the way


def test_issue28_beyond_the_workers_a_moment_is_503_with_retry_after(user, settings, fresh_kept):
    """While the process projects as many moments as it may, another is refused with
    a 503 saying when to retry (after waiting CHATUI_MOMENT_WAIT_SECONDS), not queued
    behind them; the page of the present is not held up."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(random.Random(10), runs=2))
    client = Client()
    client.force_login(user)
    with moment_slot_held(settings):
        for response in (
            client.get(conversation.get_absolute_url(), {"at": 3}),
            client.get(f"/c/{conversation.pk}/at/3"),
            client.get(f"/c/{conversation.pk}/replay", {"at": 3}),
        ):
            assert response.status_code == 503
            assert response["Retry-After"] == "1"
            assert "time travel is busy" in response.json()["error"]
        assert client.get(conversation.get_absolute_url()).status_code == 200
        # Before the first event nothing is projected: no slot needed.
        assert client.get(f"/c/{conversation.pk}/at/0").status_code == 200
    assert client.get(f"/c/{conversation.pk}/at/3").status_code == 200


def test_issue28_a_dropped_scratch_database_is_freed_at_once(user, fresh_kept):
    """Not left to the garbage collector (Django's `close()` keeps an in-memory SQLite
    database open; the wrapper's reference cycles kept ~15 MB a step alive)."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(conversation, generated_log(random.Random(11), runs=2))
    replay.moment(conversation, conversation.last_seq)
    key = (connections["default"].settings_dict["NAME"], conversation.pk, 0)
    _start, held = replay.kept.take(key, conversation.last_seq)
    replay.kept.hold(key, held)
    assert held.database.connection is not None
    conversation.delete()
    assert held.database.connection is None


def test_issue28_a_scratch_database_answers_like_as_the_real_one_does(user, fresh_kept):
    """The projector's `startswith` (an AgentSpine run is one named "agentspine-…") is
    a LIKE: SQLite's ignores ASCII case, PostgreSQL's does not. Scratch databases are
    SQLite beside both, and answer as the real database does."""
    conversation = Conversation.objects.create(owner=user, title="T")
    ingest(
        conversation,
        [
            {"type": "user.message", "run_id": "AGENTSPINE-1", "content": "x"},
            {"type": "agent.status", "run_id": "AGENTSPINE-1", "status": "running"},
        ],
    )

    def agentspine_runs() -> list[str]:
        return list(
            Run.objects.filter(run_id__startswith="agentspine-").values_list("run_id", flat=True)
        )

    real = agentspine_runs()
    replay.moment(conversation, conversation.last_seq)
    key = (connections["default"].settings_dict["NAME"], conversation.pk, 0)
    _start, held = replay.kept.take(key, conversation.last_seq)
    with replay._scratch_database(held.database):
        scratch = agentspine_runs()
    held.close()
    assert scratch == real
    assert real == ([] if connections["default"].vendor == "postgresql" else ["AGENTSPINE-1"])
