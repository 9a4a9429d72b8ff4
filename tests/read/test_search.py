"""docs/rendering.md#search: full-text search through the database's own index
(chatui/read/search.py).

Every test runs against the configured database: SQLite's FTS5 by default, PostgreSQL's
tsvector + GIN with DATABASE_URL=postgres://… (the cluster suite), through the same
selector, so one file proves both paths.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatui.ingest import search_index
from chatui.ingest.service import ingest, reproject
from chatui.models import Conversation, Message
from chatui.read import search, selectors
from chatui.read.search import parse_query

HOSTILE_QUERIES = [
    '"',
    '""',
    '"unbalanced',
    "*",
    "zeb*",
    "NEAR(kraken sonar)",
    "NEAR",
    "kraken NOT sonar",
    "AND OR NOT",
    "-kraken",
    "title:kraken",
    "{document}:kraken",
    "(kraken",
    "kraken)",
    "^kraken",
    "'kraken'",
    "kraken:*",
    "!kraken & | <->",
    "\\",
    "%_%",
    "😀",
    "кракен",
    "\u0301",
    "a" * 5000,
    " ".join(["kraken"] * 500),
]


def tool_run(
    call_id: str, name: str, args: dict, *, result=None, error=None, details=None
) -> list[dict]:
    completed = {"type": "agent.tool.completed", "tool_call_id": call_id}
    if error is not None:
        completed["error"] = error
    else:
        completed["result"] = result
    if details is not None:
        completed["details"] = details
    started = {"type": "agent.tool.started", "tool_call_id": call_id, "tool_name": name}
    return [{**started, "args": args}, completed]


def conversation_of(owner, title: str, events: list[dict]) -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title=title)
    ingest(conversation, events)
    return conversation


def hits(user, text: str, **kwargs) -> list[search.MessageHit]:
    results = search.search(user, text, **kwargs)
    return [hit for group in results.groups for hit in group.hits]


def found_conversations(user, text: str) -> list[str]:
    return [group.conversation.title for group in search.search(user, text).groups]


def message(conversation: Conversation, message_id: str) -> Message:
    return Message.objects.get(conversation=conversation, message_id=message_id)


@pytest.fixture
def expedition(user) -> Conversation:
    return conversation_of(
        user,
        "Expedition log",
        [
            {"type": "user.message", "message_id": "u1", "content": "Where is the kraken?"},
            {
                "type": "agent.step.completed",
                "message_id": "a1",
                "content": "I will ask the sonar.",
                "tool_calls": [{"id": "s1", "name": "sonar_ping"}],
            },
            *tool_run(
                "s1",
                "sonar_ping",
                {"depth": "abyssal", "note": "first\nsecondline"},
                result={"echo": "leviathan", "rows": [{"species": "narwhal"}]},
            ),
            *tool_run("s2", "net_haul", {"mesh": "fine"}, error="net torn by a cephalopod"),
            *tool_run(
                "s3",
                "read_chart",
                {"sheet": 4},
                result={"text": "Chart read.", "details": {"kind": "file", "path": "reef.md"}},
            ),
            {
                "type": "agent.step.completed",
                "message_id": "a2",
                "content": "Crème brûlée at dawn.",
            },
        ],
    )


# -- what is found ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message_id", "field"),
    [
        ("kraken", "u1", "text"),  # user text
        ("ask the", "a1", "text"),  # assistant text
        ("ping", "tool_s1", "tool"),  # tool name, split at "_"
        ("abyssal", "tool_s1", "args"),  # args value
        ("depth", "tool_s1", "args"),  # args key
        ("secondline", "tool_s1", "args"),  # a word after "\n" in a JSON string
        ("leviathan", "tool_s1", "result"),  # structured result
        ("narwhal", "tool_s1", "result"),  # nested in the result
        ("cephalopod", "tool_s2", "error"),  # error
        ("reef", "tool_s3", "details"),  # details
        ("creme brulee", "a2", "text"),  # diacritics and case folded
        ("CRÈME", "a2", "text"),
    ],
)
def test_sec15_finds_text_tool_names_args_results_errors_and_details(
    user, expedition, text, message_id, field
):
    found = hits(user, text)
    assert found, text
    assert found[0].pk == message(expedition, message_id).pk
    assert found[0].field == field


def test_sec15_finds_titles_marked(user, expedition):
    results = search.search(user, "expedition")
    assert [group.conversation.pk for group in results.groups] == [expedition.pk]
    assert results.groups[0].title == [("Expedition", True), (" log", False)]
    assert results.groups[0].hits == []


def test_sec15_title_set_before_any_event_is_indexed_with_the_first_event(user):
    conversation = Conversation.objects.create(owner=user, title="Quarterly walrus census")
    assert found_conversations(user, "walrus") == []  # nothing in it yet
    ingest(conversation, {"type": "agent.status", "status": "running", "run_id": "r1"})
    assert found_conversations(user, "walrus") == ["Quarterly walrus census"]


def test_sec15_title_taken_from_the_first_user_message_is_indexed(user):
    conversation = Conversation.objects.create(owner=user)
    ingest(conversation, {"type": "agent.status", "status": "running", "run_id": "r1"})
    ingest(conversation, {"type": "user.message", "content": "Penguins of the south"})
    results = search.search(user, "penguins")
    assert results.groups[0].title[0] == ("Penguins", True)


def test_sec15_every_word_must_match_the_same_message(user, expedition):
    assert [hit.field for hit in hits(user, "kraken where")] == ["text"]
    assert hits(user, "kraken leviathan") == []  # two messages, one word each


def test_sec15_last_word_matches_as_a_prefix_when_it_has_three_letters(user, expedition):
    assert [hit.pk for hit in hits(user, "levia")] == [message(expedition, "tool_s1").pk]
    snippet = hits(user, "levia")[0].snippet
    assert ("leviathan", True) in snippet
    assert hits(user, "levia ") == []  # a space after it: the whole word only
    assert hits(user, "le") == []  # too short to be a prefix
    assert hits(user, "levia kraken") == []  # only the last word is a prefix


def test_sec15_words_are_phrases_adjacent_as_typed(user, expedition):
    assert [hit.field for hit in hits(user, "sonar_ping")] == ["tool"]
    assert hits(user, "ping_sonar") == []


def test_sec15_newest_first_grouped_by_conversation(user):
    older = conversation_of(user, "one", [{"type": "user.message", "content": "otter A"}])
    newer = conversation_of(user, "two", [{"type": "user.message", "content": "otter B"}])
    ingest(older, {"type": "user.message", "content": "otter C"})
    results = search.search(user, "otter")
    assert [group.conversation.pk for group in results.groups] == [older.pk, newer.pk]
    assert [len(group.hits) for group in results.groups] == [2, 1]
    assert results.groups[0].hits[0].snippet == [("otter", True), (" C", False)]


def test_sec15_pages_through_many_hits(user, conversation):
    ingest(conversation, [{"type": "user.message", "content": f"badger {n}"} for n in range(7)])
    first = search.search(user, "badger", limit=3)
    shown = [hit.snippet[-1][0] for hit in first.groups[0].hits]
    assert shown == [" 6", " 5", " 4"]
    second = search.search(user, "badger", limit=3, before=first.next_before)
    assert [hit.snippet[-1][0] for hit in second.groups[0].hits] == [" 3", " 2", " 1"]
    last = search.search(user, "badger", limit=3, before=second.next_before)
    assert [hit.snippet[-1][0] for hit in last.groups[0].hits] == [" 0"]
    assert last.next_before is None


def test_sec15_hit_links_to_the_message_in_its_conversation(user, expedition):
    hit = hits(user, "cephalopod")[0]
    pk = message(expedition, "tool_s2").pk
    assert (hit.dom_id, hit.role, hit.tool_name) == (f"m-{pk}", "tool", "net_haul")
    assert hit.url == f"/c/{expedition.pk}/?m={pk}&hl=cephalopod%2A#m-{pk}"
    assert hit.label == "net_haul · error"


# -- who sees what ---------------------------------------------------------------------------


def test_sec15_another_users_matching_conversation_is_not_returned(user, other_user):
    conversation_of(other_user, "theirs", [{"type": "user.message", "content": "secret kraken"}])
    Conversation.objects.create(owner=user, title="Kraken notes")  # no event: not indexed
    assert found_conversations(user, "kraken") == []
    mine = conversation_of(user, "mine", [{"type": "user.message", "content": "my kraken"}])
    assert found_conversations(user, "kraken") == ["mine"]
    assert found_conversations(user, "secret") == []
    assert [hit.pk for hit in hits(user, "kraken")] == [message(mine, "msg_1").pk]


def test_sec15_an_auditor_sees_every_users_conversations(user, other_user):
    conversation_of(other_user, "theirs", [{"type": "user.message", "content": "secret kraken"}])
    conversation_of(user, "mine", [{"type": "user.message", "content": "my kraken"}])
    user.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    user = type(user).objects.get(pk=user.pk)  # permissions are cached per instance
    assert found_conversations(user, "kraken") == ["mine", "theirs"]


def test_sec15_the_auditor_group_sees_every_users_conversations(user, other_user):
    conversation_of(other_user, "theirs", [{"type": "user.message", "content": "secret kraken"}])
    user.groups.add(Group.objects.get(name="auditor"))
    assert found_conversations(user, "secret") == ["theirs"]


def test_sec15_anonymous_gets_nothing(expedition):
    from django.contrib.auth.models import AnonymousUser

    assert search.search(AnonymousUser(), "kraken").groups == []


# -- hostile input ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", HOSTILE_QUERIES)
def test_sec15_hostile_queries_never_raise(client, user, expedition, text):
    search.search(user, text)
    client.force_login(user)
    assert client.get("/", {"q": text}).status_code == 200
    assert client.get("/", {"q": text, "before": "5"}).status_code == 200


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("NEAR(kraken)", []),
        ("kraken)", ["kraken"]),
        ("kraken NOT sonar", []),
        ("-kraken", ["kraken"]),
        ("title:kraken", []),
        ('"kraken', ["kraken"]),
        ("kraken:*", ["kraken"]),
    ],
)
def test_sec15_operators_in_input_are_plain_words(user, conversation, text, words):
    """ "NEAR", "NOT", ":" and the like are words to look for, never query syntax."""
    ingest(conversation, {"type": "user.message", "content": "kraken"})
    expected = ["Test"] if words else []
    assert found_conversations(user, text) == expected
    ingest(conversation, {"type": "user.message", "content": text})
    assert found_conversations(user, text) == ["Test"]


def test_sec15_query_is_built_from_quoted_words_only():
    query = parse_query('re-ad "fi*le NEAR(x) :col')
    assert query.fts5() == '"re ad" "fi le" "near x" "col" *'
    assert query.tsquery() == "('re' <-> 'ad') & ('fi' <-> 'le') & ('near' <-> 'x') & ('col':*)"
    assert parse_query("\"*-:()'") is None
    assert parse_query("   ") is None


def test_sec15_hostile_text_reaches_the_page_escaped_with_the_match_marked(client, user):
    conversation_of(
        user,
        "<img src=x onerror=alert(1)>",
        [{"type": "user.message", "content": "<script>alert('owl')</script> @here owl"}],
    )
    client.force_login(user)
    html = client.get("/", {"q": "owl"}).content.decode()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#x27;<mark>owl</mark>&#x27;)&lt;/script&gt;" in html
    assert "@\u200bhere <mark>owl</mark>" in html  # T1: no mention
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


# -- snippets --------------------------------------------------------------------------------


def test_sec15_snippet_is_a_window_around_the_first_match():
    query = parse_query("needle")
    text = "hay " * 100 + "the needle is here, needle again " + "straw " * 100
    parts = search.snippet_parts(text, query)
    assert parts[0] == ("…", False) and parts[-1] == ("…", False)
    assert [part for part in parts if part[1]] == [("needle", True), ("needle", True)]
    assert len("".join(text for text, _ in parts)) <= search.SNIPPET_CHARS + 2
    assert parts[1][0].startswith("hay ")  # starts at a word, not in one


def test_sec15_snippet_marks_whole_words_in_the_original_spelling():
    query = parse_query("cafe ")  # a space after it: whole words only
    parts = search.snippet_parts("Un CAFÉ, deux cafés\nou\tcafe_au_lait", query)
    assert parts == [
        ("Un ", False),
        ("CAFÉ", True),
        (", deux cafés ou ", False),
        ("cafe", True),
        ("_au_lait", False),
    ]


def test_sec15_snippet_none_when_no_word_matches():
    assert search.snippet_parts("cafeteria", parse_query("cafe ")) is None
    assert search.snippet_parts("cafeteria", parse_query("cafe")) == [("cafeteria", True)]


# -- keeping the index -----------------------------------------------------------------------


def index_words(pk: int) -> str | None:
    """The words the index holds for message `pk`, whatever the database."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT document FROM chatui_message_search WHERE rowid = %s", [pk])
        else:
            cursor.execute(
                "SELECT document::text FROM chatui_message_search WHERE message_id = %s", [pk]
            )
        row = cursor.fetchone()
    return row[0] if row else None


def test_sec15_reprojection_keeps_the_index(user, expedition):
    old = message(expedition, "tool_s1").pk
    reproject(expedition)
    new = message(expedition, "tool_s1").pk
    assert new != old
    assert index_words(old) is None  # deleted with its message (the trigger)
    assert [hit.pk for hit in hits(user, "leviathan")] == [new]
    assert found_conversations(user, "expedition") == ["Expedition log"]


def test_sec15_deleting_a_conversation_empties_its_index_rows(user, expedition):
    pks = list(expedition.messages.values_list("pk", flat=True))
    expedition.delete()
    assert [index_words(pk) for pk in pks] == [None] * len(pks)
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM chatui_title_search")
        assert cursor.fetchone()[0] == 0


def test_sec15_rebuild_indexes_what_exists(user, expedition):
    """The migration's backfill: an empty index, rebuilt, finds everything again."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM chatui_message_search")
        cursor.execute("DELETE FROM chatui_title_search")
    assert hits(user, "leviathan") == [] and found_conversations(user, "expedition") == []
    search_index.rebuild()
    assert [hit.pk for hit in hits(user, "leviathan")] == [message(expedition, "tool_s1").pk]
    assert found_conversations(user, "expedition") == ["Expedition log"]


def test_sec15_streamed_answer_is_indexed_when_its_step_completes(user, conversation):
    ingest(conversation, {"type": "agent.message.delta", "message_id": "a1", "delta": "The yak "})
    ingest(conversation, {"type": "agent.message.delta", "message_id": "a1", "delta": "grazes"})
    assert hits(user, "yak") == []
    assert index_words(message(conversation, "a1").pk) is None
    ingest(
        conversation,
        {"type": "agent.step.completed", "message_id": "a1", "content": "The yak grazes."},
    )
    assert [hit.pk for hit in hits(user, "grazes")] == [message(conversation, "a1").pk]


def test_sec15_streamed_answer_left_open_is_indexed_when_its_run_ends(user, conversation):
    run = {"run_id": "r1"}
    ingest(
        conversation,
        [
            {"type": "agent.status", "status": "running", **run},
            {"type": "agent.message.delta", "message_id": "a1", "delta": "Half a gnu", **run},
        ],
    )
    assert hits(user, "gnu") == []
    ingest(conversation, {"type": "agent.status", "status": "failed", **run})
    assert [hit.pk for hit in hits(user, "gnu")] == [message(conversation, "a1").pk]
    reproject(conversation)  # the same rule on rebuild
    assert [hit.pk for hit in hits(user, "gnu")] == [message(conversation, "a1").pk]


def test_sec15_deltas_and_progress_do_not_touch_the_index(conversation):
    """Streaming stays linear: a delta or a progress line writes no index row."""
    ingest(conversation, {"type": "agent.message.delta", "message_id": "a1", "delta": "x"})
    ingest(conversation, tool_run("t1", "build", {"target": "all"})[0])
    for event in (
        {"type": "agent.message.delta", "message_id": "a1", "delta": "more words"},
        {"type": "agent.tool.progress", "tool_call_id": "t1", "output": "compiling\n"},
    ):
        with CaptureQueriesContext(connection) as queries:
            ingest(conversation, event)
        assert not [q for q in queries.captured_queries if "_search" in q["sql"]]


def test_sec15_a_batch_is_indexed_in_one_statement(conversation):
    events = [{"type": "user.message", "content": f"vole {n}"} for n in range(50)]
    with CaptureQueriesContext(connection) as queries:
        ingest(conversation, events)
    writes = [q for q in queries.captured_queries if "INTO chatui_message_search" in q["sql"]]
    assert len(writes) == 1


def test_sec15_ephemeral_statuses_and_hidden_json_are_not_searchable(user, conversation):
    ingest(
        conversation,
        [
            {"type": "agent.status", "status": "running", "run_id": "r1"},
            {"type": "agent.status", "status": "thinking", "message": "pondering", "run_id": "r1"},
            {
                "type": "agent.step.completed",
                "message_id": "a1",
                "content": '{"query": "marmot"}',
                "tool_calls": [{"id": "c1", "name": "lookup", "args": {"query": "marmot"}}],
                "run_id": "r1",
            },
        ],
    )
    assert hits(user, "pondering") == []
    # R3 hides the assistant's JSON; the tool call carrying the same args is what is found.
    assert [hit.field for hit in hits(user, "marmot")] == ["args"]


def test_sec15_search_page_query_count_does_not_grow_with_hits(
    client, user, conversation, django_assert_max_num_queries
):
    ingest(conversation, [{"type": "user.message", "content": f"lynx {n}"} for n in range(60)])
    client.force_login(user)
    with django_assert_max_num_queries(8):  # session, user, permissions, 4 for search
        html = client.get("/", {"q": "lynx"}).content.decode()
    assert html.count("data-search-hit") == search.HITS_SHOWN
    assert "45 more matches in this conversation" in html
    more = re.search(r'href="\?q=lynx&amp;before=(\d+)"', html)
    assert more is not None
    page2 = client.get("/", {"q": "lynx", "before": more.group(1)}).content.decode()
    shown = [int(pk) for pk in re.findall(r'data-message-pk="(\d+)"', page2)]
    assert shown == list(range(int(more.group(1)) - 1, 0, -1))[: search.HITS_SHOWN]
    assert "5 more matches in this conversation" in page2


def test_sec15_bad_before_is_400(client, user):
    client.force_login(user)
    assert client.get("/", {"q": "x", "before": "abc"}).status_code == 400


def test_sec11_admin_search_uses_the_index(client, user, other_user):
    conversation_of(other_user, "Ledger", [*tool_run("t1", "audit_trail", {"year": 1999})])
    superuser = type(user).objects.create_superuser("root", password="root-password-1")
    client.force_login(superuser)
    for term in ("trail", "1999", 'NEAR("(', "mallory"):
        response = client.get("/admin/chatui/conversation/", {"q": term})
        assert response.status_code == 200
        titles = {str(c) for c in response.context["cl"].result_list}
        assert titles == (set() if term.startswith("NEAR") else {"Ledger"}), term


# -- opening a hit: the window around it -----------------------------------------------------


@pytest.fixture
def long_history(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="long")
    ingest(conversation, [{"type": "user.message", "content": f"line {n}"} for n in range(600)])
    return conversation


def test_sec15_window_around_an_old_message_holds_it(long_history):
    anchor = message(long_history, "msg_101")
    window, has_earlier = selectors.transcript_window(long_history, around=anchor.position)
    assert anchor in window
    assert [m.content for m in (window[0], window[-1])] == ["line 0", "line 199"]
    assert has_earlier is False
    assert selectors.has_later(long_history, window)
    middle = message(long_history, "msg_301")
    window, has_earlier = selectors.transcript_window(long_history, around=middle.position)
    assert [m.content for m in (window[0], window[-1])] == ["line 200", "line 399"]
    assert has_earlier and selectors.has_later(long_history, window)


def test_sec15_window_around_a_recent_message_is_the_latest_window(long_history):
    latest, _ = selectors.transcript_window(long_history)
    anchor = message(long_history, "msg_401")  # the 200th from the end
    window, _ = selectors.transcript_window(long_history, around=anchor.position)
    assert window == latest
    assert not selectors.has_later(long_history, window)


def test_sec15_window_around_is_widened_to_whole_batches(user, conversation):
    calls = [ev for n in range(30) for ev in tool_run(f"t{n}", "step", {"n": n}, result="ok")]
    ingest(
        conversation,
        [
            {"type": "user.message", "content": "go"},
            *calls,
            {"type": "user.message", "content": "x"},
        ]
        + [{"type": "user.message", "content": f"filler {n}"} for n in range(300)],
    )
    anchor = message(conversation, "tool_t15")
    window, _ = selectors.transcript_window(conversation, around=anchor.position, limit=10)
    ids = [m.message_id for m in window]
    assert ids[0] == "msg_1" and ids[-1] == "tool_t29"  # the whole batch and what opens it


def test_sec15_opening_an_old_hit_shows_its_window_and_says_newer_exist(client, user, long_history):
    anchor = message(long_history, "msg_301")
    client.force_login(user)
    html = client.get(f"{long_history.get_absolute_url()}?m={anchor.pk}").content.decode()
    assert f'id="m-{anchor.pk}"' in html
    assert "line 300" in html and "line 599" not in html
    assert f'data-around="{anchor.position}"' in html
    assert 'id="show-latest"' in html and f'href="{long_history.get_absolute_url()}"' in html
    assert "earlier?before=" in html  # "load earlier" still works above the window
    refreshed = client.get(f"/c/{long_history.pk}/transcript", {"around": anchor.position})
    assert f'id="m-{anchor.pk}"' in refreshed.content.decode()


def test_sec15_opening_a_recent_hit_is_the_live_page(client, user, long_history):
    anchor = message(long_history, "msg_590")
    client.force_login(user)
    html = client.get(f"{long_history.get_absolute_url()}?m={anchor.pk}").content.decode()
    assert f'id="m-{anchor.pk}"' in html and "line 599" in html
    assert "data-around" not in html and "show-latest" not in html


def test_sec15_a_hit_of_another_conversation_or_gone_opens_the_latest(
    client, user, long_history, expedition
):
    client.force_login(user)
    foreign = message(expedition, "u1").pk
    html = client.get(f"{long_history.get_absolute_url()}?m={foreign}").content.decode()
    assert "line 599" in html and "data-around" not in html
    assert client.get(long_history.get_absolute_url(), {"m": "x1"}).status_code == 400
    assert client.get(f"/c/{long_history.pk}/transcript", {"around": "-1"}).status_code == 400


# -- W9: search that reads well --------------------------------------------------------


def snippet_text(hit: search.MessageHit) -> str:
    return "".join(text for text, _ in hit.snippet)


def test_w9_snippets_are_plain_text_without_markdown_syntax(user):
    conversation_of(
        user,
        "markdown",
        [
            {
                "type": "agent.step.completed",
                "message_id": "a1",
                "content": "## Result\n\nRun **`pytest -x`** now, as "
                "[the guide](https://ex.org/g) says.\n\n```sh\npytest --lf\n```",
            }
        ],
    )
    (hit,) = hits(user, "pytest")
    shown = snippet_text(hit)
    assert "pytest -x" in shown and "the guide" in shown and "pytest --lf" in shown
    for syntax in ("**", "`", "##", "](", "https://ex.org"):
        assert syntax not in shown
    assert [text for text, is_match in hit.snippet if is_match] == ["pytest", "pytest"]


def test_w9_hostile_markdown_in_a_snippet_reaches_the_page_as_text(client, user):
    conversation_of(
        user,
        "hostile",
        [
            {
                "type": "agent.step.completed",
                "message_id": "a1",
                "content": '**x** <img src=x onerror="alert(1)"> [zebu](javascript:alert(2))',
            }
        ],
    )
    client.force_login(user)
    html = client.get("/", {"q": "zebu"}).content.decode()
    # As the page shows it: raw HTML is text (escaped); a `javascript:` link is no link
    # for the parser, so it stays text too.
    assert "<img src=x" not in html and 'href="javascript:' not in html
    assert "x &lt;img src=x onerror=&quot;alert(1)&quot;&gt; [<mark>zebu</mark>](javascript" in html


def test_w9_coloured_tool_output_is_found_by_its_words_and_shown_without_escapes(user):
    conversation_of(
        user,
        "coloured",
        tool_run("t1", "bash", {"command": "pytest"}, result="\x1b[32mPASSED\x1b[0m test_wombat"),
    )
    (hit,) = hits(user, "passed")
    assert hit.field == "result"
    assert "\x1b" not in snippet_text(hit) and "[32m" not in snippet_text(hit)
    assert [text for text, is_match in hit.snippet if is_match] == ["PASSED"]


def test_w9_a_hit_link_names_the_words_to_mark_in_its_entry(user, expedition):
    (hit,) = hits(user, "net cephal")
    pk = message(expedition, "tool_s2").pk
    assert hit.url == f"/c/{expedition.pk}/?m={pk}&hl=net+cephal%2A#m-{pk}"
