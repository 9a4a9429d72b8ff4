"""[001] AgentSpine's real event stream, posted unchanged (docs/events.md#agentspine), and
T2/T3/G15."""

from __future__ import annotations

import time

import pytest

from chatui.ingest.service import ingest
from chatui.models import Message
from chatui.read.presenters import iter_entries, present_transcript
from chatui.secrets import mask_text, mask_value
from tests.support.fixtures import load_fixture

CAPTURES = ["as1_builtin_tools", "as2_details_kinds", "as3_progress_long_result"]


def post(api, conversation, events, *, one_by_one: bool) -> None:
    batches = [[event] for event in events] if one_by_one else [events]
    for batch in batches:
        answer = api.post_events(conversation, batch if len(batch) > 1 else batch[0])
        assert answer.status_code == 200, answer.content


def entries(conversation) -> dict[str, object]:
    items = present_transcript(Message.objects.filter(conversation=conversation))
    batches = [item for item in items if item.kind == "tool_batch"]
    return {e.tool_call_id: e for b in batches for e in iter_entries(b.entries)}


@pytest.mark.parametrize("name", CAPTURES)
@pytest.mark.parametrize("one_by_one", [True, False], ids=["one-per-request", "one-batch"])
def test_agentspine_capture_is_accepted_whole_and_gives_the_same_messages(
    api, conversation, name, one_by_one
):
    events = load_fixture(f"agentspine/{name}.jsonl")
    post(api, conversation, events, one_by_one=one_by_one)
    body = api.get(f"/api/v1/conversations/{conversation.pk}").json()
    assert body["last_seq"] == len(events)
    assert body["conversation"]["status"] == "completed"
    texts = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
    assert texts[-1] == events[-1]["final_text"]


def test_g15_agentspine_text_failures_are_errors_counted_and_open(api, conversation):
    post(api, conversation, load_fixture("agentspine/as1_builtin_tools.jsonl"), one_by_one=True)
    shown = entries(conversation)
    assert [shown[c].status for c in ("call_read", "call_cmd", "call_missing", "call_fetch")] == [
        "success",
        "error",
        "error",
        "error",
    ]
    assert shown["call_cmd"].call_line == "run_cmd(command=echo building; echo oops >&2; exit 3)"
    items = present_transcript(Message.objects.filter(conversation=conversation))
    batch = next(item for item in items if item.kind == "tool_batch")
    assert (batch.failed_text, batch.open) == ("3 failed", True)


def test_g15_details_exit_code_and_http_status_are_errors(api, conversation):
    post(api, conversation, load_fixture("agentspine/as2_details_kinds.jsonl"), one_by_one=False)
    shown = entries(conversation)
    assert shown["c_cmd"].is_error and shown["c_fetch"].is_error
    assert not shown["c_nokind"].is_error  # exit_code 0
    assert shown["c_file"].status == "success"


def test_g15_chatui_own_completed_with_nonzero_exit_code_is_an_error(api, conversation):
    post(
        api,
        conversation,
        [
            {"type": "agent.tool.started", "tool_call_id": "t1", "tool_name": "sh"},
            {
                "type": "agent.tool.completed",
                "tool_call_id": "t1",
                "details": {"kind": "command", "exit_code": 3},
            },
        ],
        one_by_one=False,
    )
    (entry,) = entries(conversation).values()
    assert (entry.status, entry.error) == ("error", "exit code 3")


def test_agentspine_progress_lines_while_running(api, conversation):
    events = load_fixture("agentspine/as3_progress_long_result.jsonl")
    post(api, conversation, events[:9], one_by_one=True)  # up to "→ compiling 3 modules"
    build = entries(conversation)["c_build"]
    assert (build.is_pending, build.progress_line, build.output_tail) == (
        True,
        "compiling 3 modules",
        "start:all",
    )
    post(api, conversation, events[9:11], one_by_one=True)
    build = entries(conversation)["c_build"]
    assert (build.progress_percent, build.progress_line) == (50, "linking")
    post(api, conversation, events[11:], one_by_one=True)
    build = entries(conversation)["c_build"]
    assert build.status == "success"
    assert build.preview_note == "preview — the runtime sent 200 characters"


def test_agentspine_skipped_is_its_own_muted_outcome(api, conversation):
    post(
        api,
        conversation,
        [
            {"type": "agent_start"},
            {"type": "tool_execution_start", "tool_call_id": "s", "tool_name": "x", "args": "{}"},
            {
                "type": "tool_execution_end",
                "tool_call_id": "s",
                "tool_name": "x",
                "result_preview": "Skipped due to steer",
                "skipped": True,
            },
        ],
        one_by_one=False,
    )
    entry = entries(conversation)["s"]
    assert (entry.status, entry.is_skipped, entry.is_error) == ("skipped", True, False)


def test_agentspine_args_that_do_not_decode_are_kept_as_text(api, conversation):
    post(
        api,
        conversation,
        [{"type": "tool_execution_start", "tool_call_id": "a", "tool_name": "f", "args": "{oops"}],
        one_by_one=True,
    )
    assert entries(conversation)["a"].call_line == "f({oops)"


def test_t2_pending_tool_shows_no_result_recorded_after_its_run_ends(api, conversation):
    post(
        api,
        conversation,
        [
            {"type": "agent_start"},
            {"type": "tool_execution_start", "tool_call_id": "p", "tool_name": "f", "args": "{}"},
            {"type": "agent_end", "final_text": "stopped"},
        ],
        one_by_one=True,
    )
    entry = entries(conversation)["p"]
    assert (entry.no_result, entry.is_pending, entry.elapsed_text) == (True, False, None)


def test_agentspine_reprojection_gives_the_same_ids(api, conversation):
    from chatui.ingest.service import reproject

    post(api, conversation, load_fixture("agentspine/as1_builtin_tools.jsonl"), one_by_one=True)
    before = list(Message.objects.filter(conversation=conversation).values_list("message_id"))
    reproject(conversation)
    after = list(Message.objects.filter(conversation=conversation).values_list("message_id"))
    assert before == after


def test_t3_secrets_masked_in_text_and_by_key():
    text = "curl -H 'Authorization: Bearer abcdefgh12345678' https://bob:hunter2pass@x.org"
    assert mask_text(text) == "curl -H 'Authorization: Bearer ••••5678' https://bob:••••pass@x.org"
    assert mask_text("sk-abcdefghijklmnop1234 AKIAABCDEFGHIJKLMNOP") == "••••1234 ••••MNOP"
    assert mask_value({"api_key": "supersecretvalue", "n": [{"password": "p"}]}) == {
        "api_key": "••••alue",
        "n": [{"password": "••••"}],
    }


def test_t3_masking_is_linear_on_a_long_hostile_string():
    hostile = "://" + "a:" * 100_000 + "Bearer " * 50_000 + "eyJaaaaa." * 50_000
    started = time.process_time()
    mask_text(hostile)
    # Not a timing assertion on wall time: a catastrophic pattern would take hours.
    assert time.process_time() - started < 60


def test_t3_secrets_masked_on_the_page(client, user, api, conversation):
    post(
        api,
        conversation,
        [
            {
                "type": "agent.tool.started",
                "tool_call_id": "k",
                "tool_name": "deploy",
                "args": {"api_key": "sk-live-abcdefghijklmnop9876"},
            },
            {
                "type": "agent.tool.completed",
                "tool_call_id": "k",
                "result": "used ghp_abcdefghijklmnopqrstuvwxyz",
            },
        ],
        one_by_one=False,
    )
    client.force_login(user)
    page = client.get(conversation.get_absolute_url()).content.decode()
    assert "abcdefghijklmnop9876" not in page and "••••9876" in page
    assert "ghp_abcdefghijklmnopqrstuvwxyz" not in page and "••••wxyz" in page


def test_g9_agentspine_non_object_details_render_as_json_on_the_page(
    client, user, api, conversation
):
    """docs/events.md#agentspine: AgentSpine's `details` is `Any`; a list, a string and a number
    each show in the Details panel as JSON, with no kind rows, and the page renders."""
    events = [{"type": "agent_start"}]
    for call_id, details in (("l", ["a", {"b": "<i>"}]), ("s", "plain <b>"), ("n", 7)):
        events += [
            {
                "type": "tool_execution_start",
                "tool_call_id": call_id,
                "tool_name": "t",
                "args": "{}",
            },
            {
                "type": "tool_execution_end",
                "tool_call_id": call_id,
                "tool_name": "t",
                "result_preview": "ok",
                "details": details,
            },
        ]
    post(api, conversation, events, one_by_one=False)
    client.force_login(user)
    page = client.get(conversation.get_absolute_url()).content.decode()
    assert page.count("data-tool-json") == 3 and "data-tool-kind" not in page
    assert "&quot;details&quot;: [" in page and "&quot;b&quot;: &quot;&lt;i&gt;&quot;" in page
    assert "&quot;details&quot;: &quot;plain &lt;b&gt;&quot;" in page
    assert "&quot;details&quot;: 7" in page


def test_agentspine_uncut_preview_is_the_whole_result_and_not_labelled(api, conversation):
    post(
        api,
        conversation,
        [
            {"type": "tool_execution_start", "tool_call_id": "w", "tool_name": "write_file"},
            {
                "type": "tool_execution_end",
                "tool_call_id": "w",
                "result_preview": "wrote 120 bytes",
            },
        ],
        one_by_one=False,
    )
    (entry,) = entries(conversation).values()
    assert (entry.status, entry.preview_note) == ("success", None)


def test_agentspine_second_agent_end_of_a_run_restates_its_final_answer(conversation):
    """Found by the API fuzz test: a run whose last message is not the assistant's got
    a second `<run>-final` message from a second agent_end, and the batch was a 500."""
    ending = [
        {"type": "message_end", "role": "assistant", "run_id": "c1"},
        {"type": "agent_end", "message": "", "final_text": "first"},
        {"type": "message_update", "role": "user", "delta": ""},
    ]
    ingest(conversation, ending)
    ingest(conversation, [ending[0], {"type": "agent_end", "final_text": "second"}])
    finals = conversation.messages.filter(message_id__endswith="-final")
    assert list(finals.values_list("content", flat=True)) == ["second"]


@pytest.mark.parametrize(
    "args",
    [
        '{"a": NaN}',
        '{"a": -Infinity}',
        '{"": 1E310}',  # a number that overflows to infinity once decoded (fuzz, again)
        '{"a": ' * 200 + "1" + "}" * 200,
    ],
)
def test_agentspine_args_string_that_is_not_storable_json_is_kept_as_text(api, conversation, args):
    """Found by the importer fuzz test: `args` decoded with json.loads let NaN into the
    payload, and the event log's JSON column refused it (a 500 through the API, an
    IntegrityError in an import). Decoded as strictly as a request body, it stays text."""
    start = {
        "type": "tool_execution_start",
        "tool_call_id": "c1",
        "tool_name": "read_file",
        "args": args,
    }
    post(api, conversation, [start], one_by_one=True)
    (tool,) = Message.objects.filter(conversation=conversation, role="tool")
    assert "args" not in tool.metadata
    assert tool.metadata["args_summary"] == args  # shown as the runtime sent it
