"""A long tool result is masked only as far as the page shows it (issue 28, finding 4).

A page shows 8 lines of a 900 KB result and fetches the rest on demand; masking the
whole result (and the copy of it in the metadata) cost most of a page's first load.
The presenter now masks the head it shows (chatui.secrets.mask_head, exact: the start
of the whole text masked). What the page shows must not change: each entry presented
so is compared here with the same entry presented by masking everything (the long
path switched off), secrets at every hostile place of the cut included. Only the size
in the notes differs by design: the text's as stored, not its masked copy's.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from chatui.ingest.service import ingest
from chatui.models import Message, Role
from chatui.read import presenters
from chatui.read.display import Display
from chatui.text import human_size
from tests.support.huge_results import huge_result

SECRET = "P4ssw0rdSECRETvalue"
REVEALED = Display(mask_secrets=False)


@pytest.fixture(autouse=True)
def empty_memo():
    presenters._FINISHED.clear()
    yield
    presenters._FINISHED.clear()


def tool(conversation, call_id: str, result, **completed) -> Message:
    ingest(
        conversation,
        [
            {
                "type": "agent.tool.started",
                "run_id": "r1",
                "tool_call_id": call_id,
                "tool_name": "read_log",
                "args": {"path": f"logs/{call_id}.log", "api_key": "sk-argsecret0123456789"},
            },
            {
                "type": "agent.tool.completed",
                "run_id": "r1",
                "tool_call_id": call_id,
                "result": result,
                "duration_ms": 5,
                **completed,
            },
        ],
    )
    return Message.objects.get(conversation=conversation, role=Role.TOOL, tool_call_id=call_id)


def presented(message: Message, display: Display = presenters.MASKED, *, whole: bool = False):
    """The entry as the page presents it; `whole`: by masking everything (before)."""
    presenters._FINISHED.clear()
    if not whole:
        return presenters.present_tool_entry(message, display=display)
    saved = presenters.LONG_RESULT_CHARS
    presenters.LONG_RESULT_CHARS = 10**12
    try:
        return presenters.present_tool_entry(message, display=display)
    finally:
        presenters.LONG_RESULT_CHARS = saved


SIZE = re.compile(r"\d+(?:\.\d)? [KMG]?B")


def assert_shown_alike(message: Message, display: Display = presenters.MASKED) -> None:
    """Everything the entry shows is what masking the whole texts showed, but for the
    sizes in its notes, which are the stored text's."""
    now, before = presented(message, display), presented(message, display, whole=True)
    assert now.result.text == before.result.text
    assert SIZE.sub("N", now.result.note) == SIZE.sub("N", before.result.note)
    assert (now.result.deferred, now.result.full_text) == (True, None)
    assert before.result.deferred and before.result.full_text is None
    stored = presenters._normalise_text(message.content)
    assert now.result.full_size == human_size(len(stored.encode()))
    assert now.details_json == before.details_json  # the Details' 8-line preview
    assert now.details_size is not None and before.details_size is not None
    same = dict(result=None, details_size=None)
    assert replace(now, **same) == replace(before, **same)


def lines(count: int, text: str = "GET /api/items 200 12ms") -> str:
    return "\n".join(f"[{n:05d}] {text}" for n in range(count))


def test_t3_a_long_result_shows_what_masking_it_whole_showed(conversation):
    message = tool(conversation, "big", huge_result("big"))
    assert len(message.content) > presenters.LONG_RESULT_CHARS
    assert_shown_alike(message)
    entry = presented(message)
    # Two ways indeed: the size of the text as stored, of its masked copy before.
    assert entry.result.full_size != presented(message, whole=True).result.full_size
    assert "sk-live0123456789abcdef" not in entry.result.text + entry.details_json
    assert "••••WXYZ" in entry.result.text and "••••WXYZ" in entry.details_json


@pytest.mark.parametrize(
    "head",
    [
        # a key's quoted value on the next line, across the 8-line cut
        lines(6) + '\npassword:\n   "' + SECRET + '"\n',
        # a secret running across the block's 500 characters
        "x" * 480 + " token=" + SECRET * 3 + "\n",
        # a bearer token across the head the presenter masks (1,024 characters)
        "y" * 1000 + " Authorization: Bearer " + SECRET * 10 + "\n",
        # a URL's password, a JSON key and an sk- key in the first lines
        "db postgres://bob:" + SECRET + "@db.example.org/x\n"
        '{"access_token": "' + SECRET + '"}\nkey sk-' + SECRET + "\n",
        # carriage returns: "\r\n" lines, one split by the head
        lines(3).replace("\n", "\r\n") + "\r\n" + "z" * 1014 + "\r\n",
        # masks shorter than their secrets: the head lies further on
        "".join(f"api_key={'k' * 700}{n}\n" for n in range(12)),
    ],
)
def test_t3_a_secret_at_the_cut_is_masked_as_the_whole_text_masks_it(conversation, head):
    message = tool(conversation, "cut", head + lines(8000))
    assert_shown_alike(message)
    entry = presented(message)
    assert SECRET not in entry.result.text and SECRET not in entry.details_json


def test_t3_a_long_result_on_one_line_is_masked_whole_and_shown_alike(conversation):
    """No line break: no safe cut (chatui.secrets.mask_head masks the whole text)."""
    result = "v" * 200 + f" token={SECRET} " + "w" * 100_000
    message = tool(conversation, "line", result)
    assert_shown_alike(message)
    assert SECRET not in presented(message).result.text


def test_t3_revealed_a_long_result_shows_what_it_showed(conversation):
    """A holder of chatui.view_secrets sees the head unmasked, as before."""
    message = tool(conversation, "rev", lines(3) + f"\ntoken={SECRET}\n" + lines(8000))
    assert_shown_alike(message, REVEALED)
    assert SECRET in presented(message, REVEALED).result.text


def test_t3_an_error_with_a_long_text_shows_what_it_showed(conversation):
    message = tool(conversation, "err", f"token={SECRET}\n" + lines(8000), details={"exit_code": 2})
    assert message.tool_status == "error"
    now, before = presented(message), presented(message, whole=True)
    assert now.error == before.error and SECRET not in now.error
    assert now.result.text == before.result.text


def test_t3_a_long_result_that_masks_short_shows_what_it_showed(conversation):
    """One 100 KB secret masks to a few characters: shown inline, as before."""
    message = tool(conversation, "one", "token=" + "x" * 100_000)
    now, before = presented(message), presented(message, whole=True)
    assert now.result == before.result and now.result.inline
    assert now.result.text == "token=••••xxxx"


def test_g4_a_long_result_that_is_mostly_trailing_space_is_not_long(conversation):
    """G4 reads the text without its trailing whitespace: a short one inline."""
    message = tool(conversation, "pad", "all fine" + " " * 100_000)
    entry = presented(message)
    assert entry.result.inline and entry.result.text == "all fine"


def test_g8_the_details_size_is_the_whole_result_s(conversation):
    result = lines(8000)
    message = tool(conversation, "size", result)
    whole = presenters.pretty_json(
        {"args": message.metadata["args"], "result": result, "details": None}
    )
    entry = presented(message)
    assert entry.details_size is not None
    # As stored: the args' key masked or not is a few bytes of 500 KB.
    assert entry.details_size.split()[1] == "KB"
    assert abs(float(entry.details_size.split()[0]) - len(whole.encode()) / 1024) < 0.2


def test_g16_the_whole_texts_on_demand_are_still_masked_whole(conversation):
    result = lines(4000) + f"\npassword: '{SECRET}'\n" + lines(4000)
    message = tool(conversation, "demand", result)
    output = presenters.full_tool_text(message, "output")
    details = presenters.full_tool_text(message, "details")
    assert output.count("\n") == result.count("\n")
    assert SECRET not in output and SECRET not in details
    assert "••••alue" in output and "••••alue" in details


def test_p3_a_long_entry_is_kept_by_the_memo_of_entries(conversation):
    """What a long entry holds is small now: presented once, then reused."""
    message = tool(conversation, "memo", huge_result("memo"))
    presenters._FINISHED.clear()
    first = presenters.present_tool_entry(message)
    assert presenters.present_tool_entry(message) is first
