"""docs/rendering.md#search in a real browser: the list's search box finds words in tool results and
tool args with the match in <mark>, never another user's conversation, and a hit older
than the latest 200 messages opens the conversation at that entry."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

OTHER_USER = "search-stranger"
FILLER = 260  # messages after the old hit: more than the 200 a page shows first


def tool_events(call_id: str, name: str, args: dict, result: str) -> list[dict]:
    return [
        {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": name, "args": args},
        {"type": "agent.tool.completed", "tool_call_id": call_id, "result": result},
    ]


@pytest.fixture(scope="module")
def searchable(chatui_server) -> dict[str, str]:
    mine = chatui_server.new_conversation("Survey notes")
    chatui_server.post_events(
        mine,
        [
            {"type": "user.message", "content": "Check the samples, please."},
            *tool_events("r1", "read_sample", {"tray": 3}, "Found xylocarpite in tray 3."),
            *tool_events("a1", "label_sample", {"label": "pomegranite-7"}, "labelled"),
        ],
    )
    long = chatui_server.new_conversation("Long survey")
    chatui_server.post_events(
        long,
        [
            {"type": "user.message", "content": "Start of the long survey."},
            *tool_events("old", "assay", {"sample": 1}, "The assay shows zanzibarite."),
        ]
        + [{"type": "user.message", "content": f"filler {n}"} for n in range(FILLER)],
    )
    # Another user's conversation holding every word searched for here.
    secret = "xylocarpite pomegranite zanzibarite"
    chatui_server.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User;"
        "from chatui.models import Conversation;"
        "from chatui.ingest.service import ingest;"
        f"owner = User.objects.create_user({OTHER_USER!r}, password='stranger-password-1');"
        "theirs = Conversation.objects.create(owner=owner, title='Stranger');"
        f"ingest(theirs, {json.dumps({'type': 'user.message', 'content': secret})});"
        "print(theirs.pk)",
    )
    return {"mine": mine, "long": long}


def search_for(page, word: str) -> None:
    page.fill("input[name=q]", word)
    page.press("input[name=q]", "Enter")
    page.wait_for_url(f"**/?q={word}")


@pytest.mark.parametrize(("word", "field"), [("xylocarpite", "result"), ("pomegranite", "args")])
def test_sec15_a_word_only_in_a_tool_result_or_args_finds_its_conversation_marked(
    open_page, searchable, word, field
):
    page, watch = open_page("/")
    search_for(page, word)
    groups = page.locator(".search-group")
    expect(groups).to_have_count(1)  # not the other user's conversation
    assert groups.first.get_attribute("data-conversation-id") == searchable["mine"]
    hit = groups.first.locator("[data-search-hit]")
    expect(hit).to_have_count(1)
    assert hit.get_attribute("data-field") == field
    assert hit.locator("mark").all_inner_texts() == [word]
    assert watch.page_errors == [] and watch.dialogs == []


def test_sec15_opening_an_old_hit_shows_that_entry_in_view(open_page, searchable, chatui_server):
    page, watch = open_page("/")
    search_for(page, "zanzibarite")
    hit = page.locator("[data-search-hit]")
    expect(hit).to_have_count(1)
    pk = hit.get_attribute("data-message-pk")
    hit.click()
    page.wait_for_url(
        lambda url: url.endswith(f"/c/{searchable['long']}/?m={pk}&hl=zanzibarite%2A#m-{pk}")
    )

    entry = page.locator(f"#transcript #m-{pk}")
    expect(entry).to_be_visible()  # in the DOM, its collapsed batch opened
    expect(entry).to_be_in_viewport(ratio=1)  # W9: the whole entry
    assert "zanzibarite" in entry.inner_text()
    # W9: below the sticky top bar, not under it; its matched word marked.
    top_bar = page.locator(".topbar").bounding_box()
    assert entry.bounding_box()["y"] >= top_bar["y"] + top_bar["height"]
    marks = entry.locator("mark.search-mark")
    assert set(marks.all_text_contents()) == {"zanzibarite"}
    expect(marks.first).to_be_visible()
    assert page.locator("#transcript [data-role=user]").count() < FILLER
    expect(page.locator("#show-latest a")).to_have_attribute("href", f"/c/{searchable['long']}/")

    # Live frames still arrive, but a new message is not appended after the window's gap.
    page.wait_for_function("() => window.__chatuiSocketOpen === true")
    done = chatui_server.post_events(
        searchable["long"], {"type": "user.message", "content": "news after the window"}
    )
    page.wait_for_function(
        f"() => document.getElementById('transcript').dataset.lastSeq === '{done['last_seq']}'"
    )
    assert "news after the window" not in page.locator("#transcript").inner_text()
    expect(entry).to_be_visible()

    # The owner writes from the old window: the page moves to the latest, where it shows.
    page.fill("#composer-content", "written from the old window")
    page.press("#composer-content", "Enter")
    page.wait_for_url(f"**/c/{searchable['long']}/")
    transcript = page.locator("#transcript")
    expect(transcript).to_contain_text("news after the window")
    expect(transcript).to_contain_text("written from the old window")
    # The demo agent answers it; let the run end before the server stops.
    expect(page.locator("#run-state")).to_have_attribute(
        "data-conversation-status", "completed", timeout=20000
    )
    assert watch.page_errors == [] and watch.dialogs == []


def test_w9_hostile_words_to_mark_are_only_text(open_page, searchable):
    """`hl` comes from the address bar: whatever it holds is matched against words and
    never parsed as HTML."""
    page, watch = open_page("/")
    search_for(page, "zanzibarite")
    pk = page.locator("[data-search-hit]").get_attribute("data-message-pk")
    hostile = "%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E%20%3Cb%3Eassay%20zanzibarite"
    origin = "/".join(page.url.split("/")[:3])
    page.goto(f"{origin}/c/{searchable['long']}/?m={pk}&hl={hostile}#m-{pk}")
    entry = page.locator(f"#transcript #m-{pk}")
    expect(entry).to_be_in_viewport()
    assert page.locator("#transcript img[src=x], #transcript b").count() == 0
    # "<b>assay" is no word, so it marks nothing; "zanzibarite" is, and is marked.
    marks = entry.locator("mark.search-mark")
    assert set(marks.all_text_contents()) == {"zanzibarite"}
    expect(marks.first).to_be_visible()
    assert watch.page_errors == [] and watch.dialogs == []
