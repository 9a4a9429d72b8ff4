"""chatui.db.sqlite: Django's SQLite backend with each statement's placeholders converted
once (docs/PERFORMANCE.md#p2: the conversion was ~3 % of a single event's CPU), giving exactly the
statements Django's own cursor gives."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.backends.sqlite3.base import SQLiteCursorWrapper

from chatui.db.sqlite.base import CursorWrapper, _in_qmark_style
from chatui.models import Conversation

pytestmark = pytest.mark.sqlite_only(reason="the SQLite backend itself")

STATEMENTS = [
    "SELECT 1",
    'SELECT "a" FROM "t" WHERE "b" = %s AND "c" IN (%s, %s)',
    "SELECT '%%s literal' WHERE x = %s",
    "UPDATE t SET v = v || %s WHERE k LIKE '100%%'",
    "",
]


@pytest.mark.parametrize("statement", STATEMENTS)
def test_p2_a_statement_is_converted_as_django_converts_it(statement):
    django_cursor = SQLiteCursorWrapper.__new__(SQLiteCursorWrapper)
    assert _in_qmark_style(statement) == django_cursor.convert_query(statement)


def test_p2_each_statement_text_is_converted_once():
    _in_qmark_style.cache_clear()
    for _ in range(3):
        _in_qmark_style(STATEMENTS[1])
    info = _in_qmark_style.cache_info()
    assert (info.misses, info.hits) == (1, 2)


@pytest.mark.django_db
def test_p2_the_app_runs_on_it_with_named_parameters_left_to_django(user):
    with connection.cursor() as cursor:
        assert isinstance(cursor.cursor, CursorWrapper)
        cursor.execute("SELECT %(a)s + %(b)s", {"a": 1, "b": 2})  # "pyformat": Django's way
        assert cursor.fetchone() == (3,)
    Conversation.objects.create(owner=user, title="50% done")
    assert Conversation.objects.filter(title__contains="%").count() == 1
