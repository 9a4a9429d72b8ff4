"""SPEC §8 P2: prepared statements convert their values with shortcuts for the common
types (chatui.prepared._converter); every value must reach the database exactly as
the field's own `get_db_prep_save` would send it."""

from __future__ import annotations

import uuid
import warnings
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection, models

from chatui.models import Conversation, Event, Message, Run
from chatui.prepared import _converter

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


def prepared_by_the_field(field: models.Field, value):
    try:
        return ("value", field.get_db_prep_save(value, connection))
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
                got = ("value", convert(value, connection))
            except Exception as problem:
                got = ("error", type(problem))
            assert got == expected, (field, value)
            if got[0] == "value":
                assert type(got[1]) is type(expected[1]), (field, value)
