"""docs/PERFORMANCE.md#p2: prepared statements convert their values with shortcuts for the common
types (chatui.db.prepared._converter); every value must reach the database exactly as
the field's own `get_db_prep_save` would send it."""

from __future__ import annotations

import uuid
import warnings
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection, models

from chatui.db.prepared import _converter
from chatui.models import Conversation, Event, Message, Run

VALUES = [
    None,
    "",
    "text",
    "5",
    0,
    7,
    2**40,
    True,
    False,
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "12345678123456781234567812345678",
    datetime(2026, 1, 5, 9, 0, 1, 250, tzinfo=UTC),
    datetime(2026, 1, 5, 9, 0, tzinfo=timezone(timedelta(hours=-5))),
    datetime(2026, 1, 5, 9, 0),  # naive: the field's way (it warns and makes it aware)
    {"a": [1, 2]},
]


def sent(value):
    """A parameter as the database gets it. psycopg wraps JSON in `Json`, which
    compares by identity: two wrappers of equal values are compared by what they wrap."""
    if type(value).__name__ in ("Json", "Jsonb"):
        return (type(value), sent(value.obj))
    if isinstance(value, list):
        return [sent(item) for item in value]
    return value


def prepared_by_the_field(field: models.Field, value):
    try:
        return ("value", sent(field.get_db_prep_save(value, connection)))
    except Exception as problem:  # the shortcut must fail the same way
        return ("error", type(problem))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "field",
    [f for model in (Conversation, Event, Message, Run) for f in model._meta.concrete_fields],
    ids=lambda f: f"{f.model.__name__}.{f.name}",
)
def test_p2_a_prepared_value_is_what_its_field_would_send(field):
    convert = _converter(field, connection)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for value in VALUES:
            expected = prepared_by_the_field(field, value)
            try:
                got = ("value", sent(convert(value, connection)))
            except Exception as problem:
                got = ("error", type(problem))
            assert got == expected, (field, value)
            if got[0] == "value":
                assert type(got[1]) is type(expected[1]), (field, value)


def by_each_field(fields, obj, *, add: bool) -> list:
    return [field.get_db_prep_save(field.pre_save(obj, add), connection) for field in fields]


@pytest.mark.django_db
def test_p2_a_saved_row_sends_what_each_fields_save_would_and_stamps_auto_now(conversation):
    from chatui.ingest.service import SAVE_CONVERSATION

    conversation.updated_at = datetime(2000, 1, 1, tzinfo=UTC)
    params = SAVE_CONVERSATION._params(conversation, connection)
    stamped = conversation.updated_at
    assert stamped.year > 2000  # auto_now: stamped by the save
    fields = [*SAVE_CONVERSATION.fields, Conversation._meta.pk]
    expected = by_each_field(fields, conversation, add=False)  # stamps it again
    updated = fields.index(Conversation._meta.get_field("updated_at"))
    expected[updated] = connection.ops.adapt_datetimefield_value(stamped)
    assert params == expected


@pytest.mark.django_db
def test_p2_inserted_rows_send_what_each_fields_save_would(conversation):
    from chatui.db.prepared import PreparedInsert

    when = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    messages = [
        Message(conversation=conversation, message_id=f"m{n}", role="tool", content="x" * n,
                timestamp=when, metadata={"n": n}, position=n, is_final=bool(n % 2))
        for n in range(3)
    ]  # fmt: skip
    insert = PreparedInsert(Message)
    assert sent(insert._rows(messages, connection)) == [
        sent(by_each_field(insert.fields, message, add=True)) for message in messages
    ]


@pytest.mark.django_db
def test_p2_the_kept_cursor_is_made_again_when_query_logging_switches():
    from django.test.utils import CaptureQueriesContext

    from chatui.db.prepared import cursor_for

    kept = cursor_for(connection)
    assert cursor_for(connection) is kept
    with CaptureQueriesContext(connection) as captured:
        logging = cursor_for(connection)
        logging.execute("SELECT 1")
        assert logging.fetchall() == [(1,)]
    assert logging is not kept and len(captured.captured_queries) == 1
    assert cursor_for(connection) is not logging


@pytest.mark.django_db
def test_the_kept_cursor_is_the_threads_own_through_django_db_connection():
    from django.db import connections

    from chatui.db.prepared import cursor_for

    assert cursor_for(connection) is cursor_for(connections["default"])
    assert "_chatui_cursor" not in connection.__dict__  # not on the shared proxy
