"""T3 in search (issue 28, finding 1): what is indexed and what is searched is the masked
text. The page shows `password=••••alue`; the index, the snippets and the admin's
message search must not know more, or a search becomes an oracle that confirms a
secret letter by letter (`hunterp` finds 1, `hunterpX` finds 0)."""

from __future__ import annotations

import importlib
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client

from chatui.ingest import search_index
from chatui.ingest.service import ingest
from chatui.models import Conversation, Message
from chatui.read import search

PASSWORD = "P4ssw0rdSECRETvalue"
URL_PASSWORD = "hunterpass99"
SK_KEY = "sk-abcdefghijklmnopqrst"
ACCESS_TOKEN = "tok_live_QWERTY123456"
CRASH_TOKEN = "tok_crashsecret9876"
USER_KEY = "sk-usertypedthiskey0042"
#: Each secret as the index would spell its words (search_index.words): none may be stored.
SECRET_WORDS = (
    "p4ssw0rdsecretvalue",
    "hunterpass99",
    "abcdefghijklmnopqrst",
    "qwerty123456",
    "crashsecret9876",
    "usertypedthiskey0042",
)

EVENTS = [
    {"type": "user.message", "message_id": "u1", "content": f"use {USER_KEY} please"},
    {"type": "agent.status", "status": "running", "run_id": "r1"},
    {
        "type": "agent.tool.started",
        "run_id": "r1",
        "tool_call_id": "c1",
        "tool_name": "connect",
        "args": {"password": PASSWORD, "url": f"https://bob:{URL_PASSWORD}@db.example.org/x"},
    },
    {
        "type": "agent.tool.completed",
        "run_id": "r1",
        "tool_call_id": "c1",
        "result": {"access_token": ACCESS_TOKEN, "note": "connected"},
    },
    {
        "type": "agent.tool.started",
        "run_id": "r1",
        "tool_call_id": "d1",
        "tool_name": "deploy",
        "args": {"target": "prod"},
    },
    {
        "type": "agent.tool.completed",
        "run_id": "r1",
        "tool_call_id": "d1",
        "result": f"deployed with {SK_KEY}",
    },
    {
        "type": "agent.status",
        "status": "failed",
        "run_id": "r1",
        "error_message": f"crash token={CRASH_TOKEN}",
    },
]


@pytest.fixture
def leaky(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="Connect")
    ingest(conversation, EVENTS)
    return conversation


def stored_documents() -> dict[int, str]:
    """Every row of the message index as the database holds it: its words in order
    (PostgreSQL keeps a `tsvector`, each word with its positions: put back in order)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT rowid, document FROM chatui_message_search")
            return dict(cursor.fetchall())
        cursor.execute("SELECT message_id, document::text FROM chatui_message_search")
        return {pk: words_in_order(vector) for pk, vector in cursor.fetchall()}


def words_in_order(vector: str) -> str:
    """`'alue':3 'connect':1 'password':2,5` → "connect password alue password"."""
    placed = {
        int(position): word
        for word, positions in re.findall(r"'((?:[^']|'')*)':([0-9,]+)", vector)
        for position in positions.split(",")
    }
    return " ".join(placed[position].replace("''", "'") for position in sorted(placed))


def stored_titles() -> list[str]:
    """Every row of the title index as the database holds it."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT title FROM chatui_title_search")
        else:
            cursor.execute("SELECT document::text FROM chatui_title_search")
        return [title for (title,) in cursor.fetchall()]


def assert_no_secret_word(text: str) -> None:
    for word in SECRET_WORDS:
        assert word not in text.casefold(), word


def auditor() -> User:
    person = User.objects.create_user("audra", password="audra-password-1", is_staff=True)
    person.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    return person


def page_hits(person: User, text: str) -> int:
    client = Client()
    client.force_login(person)
    response = client.get("/", {"q": text})
    assert response.status_code == 200
    return response.content.decode().count("data-search-hit")


def test_t3_search_index_rows_hold_no_secret_value(leaky):
    documents = stored_documents()
    messages = list(leaky.messages.all())
    assert {m.pk for m in messages} >= {m.pk for m in messages if search_index.is_indexable(m)}
    assert documents, "the conversation is indexed"
    for document in documents.values():
        assert_no_secret_word(document)
    for message in messages:
        assert_no_secret_word(search_index.document(message))
    # A title taken from a first message that holds a secret: its words are masked too.
    titled = Conversation.objects.create(owner=leaky.owner)
    ingest(titled, [{"type": "user.message", "content": f"key {USER_KEY} for prod"}])
    titled.refresh_from_db()
    assert USER_KEY in titled.title  # shown as written, like the person's message
    assert len(stored_titles()) == 2
    for title in stored_titles():
        assert_no_secret_word(title)
    # What the page shows stays findable: the key names and the masks' last characters.
    tool = leaky.messages.get(tool_call_id="c1")
    assert {"password", "alue", "access", "token"} <= set(documents[tool.pk].split())


def test_t3_search_snippet_for_a_secret_key_shows_only_the_mask(user, leaky):
    results = search.search(user, "password")
    (hit,) = [hit for group in results.groups for hit in group.hits]
    text = "".join(part for part, _ in hit.snippet)
    assert PASSWORD not in text and "••••alue" in text
    assert [part for part, marked in hit.snippet if marked] == ["password"]
    html = Client()
    html.force_login(user)
    page = html.get("/", {"q": "password"}).content.decode()
    assert PASSWORD not in page and "••••alue" in page


@pytest.mark.parametrize(
    ("prefix", "wrong"),
    [
        ("hunterp", "hunterpX"),
        ("P4ssw0rdSEC", "P4ssw0rdSECX"),
        ("sk-abcdefghijklmnop", "sk-abcdefghijklmnoX"),
        ("tok_live_QWER", "tok_live_QWEX"),
        ("tok_crashsec", "tok_crashseX"),
        ("sk-usertyped", "sk-usertypeX"),
    ],
)
def test_t3_search_is_no_oracle_for_a_secret_prefix(user, leaky, prefix, wrong):
    """A right and a wrong guess at a secret's start find the same: nothing."""
    for person in (user, auditor()):
        assert page_hits(person, prefix) == page_hits(person, wrong) == 0, prefix
        assert search.search(person, prefix).groups == []


def admin_client() -> Client:
    root = User.objects.create_superuser("root", password="root-password-1")
    client = Client()
    client.force_login(root)
    return client


def admin_found(client: Client, text: str) -> set[str]:
    response = client.get("/admin/chatui/message/", {"q": text})
    assert response.status_code == 200
    return {message.message_id for message in response.context["cl"].result_list}


@pytest.mark.parametrize(
    "secret",
    [
        "sk-abcdefghijklmnop",
        SK_KEY,
        "P4ssw0rdSECRET",
        URL_PASSWORD,
        "QWERTY123456",
        CRASH_TOKEN,
        "sk-usertyped",
    ],
)
def test_t3_admin_message_search_finds_nothing_by_a_secret_value(leaky, secret):
    assert admin_found(admin_client(), secret) == set()


def test_t3_admin_message_search_goes_through_the_masked_index(leaky):
    client = admin_client()
    deploy = leaky.messages.get(tool_call_id="d1")
    assert admin_found(client, "deployed") == {deploy.message_id}
    assert admin_found(client, "deploy") == {deploy.message_id}  # the tool name, a prefix
    assert admin_found(client, deploy.message_id) == {deploy.message_id}  # exact id
    assert admin_found(client, "c1") == {"tool_c1"}  # exact tool call id
    assert admin_found(client, 'NEAR("(') == set()  # hostile input is plain words
    scoped = client.get("/admin/chatui/message/", {"q": "deployed", "conversation": str(leaky.pk)})
    assert [m.pk for m in scoped.context["cl"].result_list] == [deploy.pk]


def test_t3_migration_rebuilds_an_old_index_from_masked_text(leaky):
    """A database indexed before the fix holds raw secret words: the data migration
    rebuilds every row from the masked text."""
    tool = leaky.messages.get(tool_call_id="c1")
    search_index._writes().index_messages(
        [(tool.pk, f"password {PASSWORD.lower()} {URL_PASSWORD}")]
    )
    assert "p4ssw0rdsecretvalue" in stored_documents()[tool.pk]
    migration = importlib.import_module("chatui.migrations.0014_search_index_masked")
    from django.apps import apps

    migration.rebuild_masked(apps, None)  # it runs no schema change
    documents = stored_documents()
    for document in documents.values():
        assert_no_secret_word(document)
    assert documents[tool.pk] == search_index.document(Message.objects.get(pk=tool.pk))


def test_t3_a_secret_right_after_a_colour_code_never_enters_the_index(user):
    """After `\\x1b[1m` a key has no word boundary before it, so masking the raw text
    missed it and the index held its letters; escapes go before masking."""
    key = "sk-colouredsecretkey0042"
    conversation = Conversation.objects.create(owner=user, title="coloured")
    ingest(
        conversation,
        [
            {
                "type": "agent.tool.started",
                "tool_call_id": "c1",
                "tool_name": "bash",
                "args": {"command": "env"},
            },
            {
                "type": "agent.tool.completed",
                "tool_call_id": "c1",
                "result": f"API_KEY \x1b[1m{key}\x1b[0m set",
            },
        ],
    )
    stored = " ".join(stored_documents().values())
    assert "colouredsecretkey0042" not in stored
    assert "1msk" not in stored  # the escape's letters glued to the key's
    assert search.search(user, "colouredsecretkey0042").groups == []
