"""Event ids chatui derives for what it writes itself are not a runtime's to take.

Found by the security probe (issue 28, finding 7): every decision on a tool call — a
person's, or the server's expiry — carries one predictable `event_id`
(`approval-<sha256 of the call id>`), so that the first one wins. A runtime that
posted any event under that id first (200: it was just an id) made every decision a
409: its approval could never be decided nor expire, and it waited forever. The same
holds for the other ids chatui derives: the composer's user messages, the built-in
agents' run events and the events that end a run (Stop, a lost worker), imports.

Now a runtime (the API, the routed events POST, the ingest socket) posting an event
whose `event_id` is in chatui's reserved space gets a 400 naming the field, and nothing
of its batch is applied.
"""

from __future__ import annotations

import pytest

from chatui.agents.runs import new_run_id
from chatui.ingest import approvals
from chatui.ingest.events import parse_events
from chatui.ingest.service import ingest
from chatui.ingest.values import EventError
from chatui.models import Event, ToolStatus

ASK = {"type": "agent.tool.approval_requested", "tool_call_id": "c1", "tool_name": "rm"}


def reserved_ids() -> list[str]:
    """One of each kind of id chatui derives itself."""
    run = new_run_id()
    return [
        approvals.decision_event_id("c1"),  # a decision, and the expiry
        "compose-0123456789abcdef",  # the composer's user message
        f"{run}.e3",  # a built-in agent's run
        f"{run}.stop.1",  # the events that end a run (Stop, reaped, lost worker)
        "import:0123456789abcdef:7",  # an imported transcript
    ]


def note(event_id: str) -> dict:
    return {"type": "agent.status", "status": "info", "message": "mine", "event_id": event_id}


# Named ids: a run id is random, and every pytest-xdist worker must collect the same tests.
@pytest.mark.parametrize(
    "event_id", reserved_ids(), ids=["decision", "compose", "run-event", "run-end", "import"]
)
def test_a_runtime_may_not_post_an_event_id_in_chatuis_reserved_space(api, conversation, event_id):
    response = api.post_events(conversation, [note("fine-1"), note(event_id)])
    assert response.status_code == 400, response.content
    problem = response.json()
    assert (problem["index"], problem["field"]) == (1, "event_id")
    assert "reserved" in problem["error"]
    assert not Event.objects.filter(conversation=conversation).exists()  # the batch, whole


def test_a_runtime_cannot_block_its_own_approval_by_taking_the_decisions_id(
    api, conversation, user
):
    """The reproduction: ask, post under the decision's id, then decide."""
    assert api.post_events(conversation, ASK).status_code == 200
    squatter = note(approvals.decision_event_id("c1"))
    assert api.post_events(conversation, squatter).status_code == 400
    decision = approvals.decide(conversation, "c1", "approved", user)
    assert decision.decision == "approved"
    [message] = conversation.messages.filter(tool_call_id="c1")
    assert message.tool_status == ToolStatus.QUEUED


def test_the_ingest_channel_refuses_reserved_event_ids_too():
    """The socket reads messages with the API's parser, as a runtime's."""
    with pytest.raises(EventError) as refused:
        parse_events([note(approvals.decision_event_id("c9"))], from_runtime=True)
    assert refused.value.field == "event_id" and refused.value.status == 400


def test_ids_that_only_resemble_chatuis_are_a_runtimes_to_use(api, conversation):
    """The reserved space is chatui's exact shapes, not every id with a like prefix."""
    theirs = ["approval", "run_abc.e1", "run_0123456789abcdef-1", "composer-1", "imports:1"]
    response = api.post_events(conversation, [note(event_id) for event_id in theirs])
    assert response.status_code == 200, response.content
    assert response.json()["accepted"] == len(theirs)


def test_chatui_itself_still_writes_under_its_own_ids(conversation, user):
    ingest(conversation, ASK)
    approvals.decide(conversation, "c1", "denied", user)
    assert Event.objects.filter(
        conversation=conversation, event_id=approvals.decision_event_id("c1")
    ).exists()
