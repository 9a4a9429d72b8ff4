"""G20 records (docs/rendering.md#g20): JSON arrays of flat objects and CSV as tables (50
rows, then "N more rows", numbers right-aligned), objects as key/value lists, and the
Details' JSON with multi-line strings as text blocks."""

from __future__ import annotations

import re

from chatui.models import Message, Role
from chatui.read import presenters
from chatui.read.rich import present_rich, records
from chatui.read.rich.views import KeyValueView, RecordsView
from tests.support.rich import CSV, RECORDS, SCRIPT, call


def test_g20_json_array_of_flat_objects_is_a_table():
    view = present_rich("query", {"tool_result": RECORDS}, "[…]").view
    assert isinstance(view, RecordsView)
    assert [(c.name, c.numeric) for c in view.columns] == [
        ("id", True),
        ("name", False),
        ("note", False),
    ]
    assert len(view.rows) == 50 and view.more_text == "10 more rows"
    assert [cell.text for cell in view.rows[2].cells] == ["2", "row 2", ""]
    assert view.rows[2].cells[0].numeric


def test_g20_json_text_of_an_array_is_read_too():
    view = present_rich("query", {}, '[{"a": 1.5, "b": null}, {"a": -2, "b": true}]').view
    assert [[c.text for c in row.cells] for row in view.rows] == [["1.5", ""], ["-2", "true"]]


def test_g20_nested_objects_are_not_a_table():
    view = present_rich("q", {"tool_result": [{"a": {"deep": 1}}]}, "x").view
    assert view is None


def test_g20_csv_with_a_header_row_is_a_table():
    view = present_rich("export_csv", {}, CSV).view
    assert isinstance(view, RecordsView)
    assert [(c.name, c.numeric) for c in view.columns] == [
        ("name", False),
        ("count", True),
        ("note", False),
    ]
    assert view.rows[0].cells[2].text == SCRIPT.replace('"', "'").replace("@", "@\u200b")


def test_g20_prose_with_commas_is_not_csv():
    assert not records.looks_like_csv("Hello, world\nI went home, then slept\nok")
    assert present_rich("x", {}, "one, two\nthree\nfour, five").view is None


def test_g20_object_is_a_key_value_list_with_text_blocks():
    view = present_rich(
        "lookup", {"tool_result": {"name": "bob", "bio": "a\nb", "n": 3}}, "{}"
    ).view
    assert isinstance(view, KeyValueView)
    assert [(p.key, p.value, p.is_block) for p in view.pairs] == [
        ("name", "bob", False),
        ("bio", "a\nb", True),
        ("n", "3", False),
    ]


def test_g20_details_strings_with_line_breaks_are_text_blocks():
    view = records.present_details({"result": "line 1\nline 2", "n": [1, {"x": "y\nz"}]})
    assert [(p.text, p.is_block) for p in view.pieces] == [
        ('{\n  "result": ', False),
        ("line 1\nline 2", True),
        (',\n  "n": [\n    1,\n    {\n      "x": ', False),
        ("y\nz", True),
        ("\n    }\n  ]\n}", False),
    ]
    assert records.present_details({"a": "no breaks"}) is None


def test_g20_secret_in_a_record_is_masked(conversation, feed):
    rows = [{"user": "a", "password": "hunter2-very-secret"}, {"user": "b", "password": "x" * 12}]
    feed(*call("q", "query", {}, result=rows))
    message = Message.objects.get(conversation=conversation, role=Role.TOOL, tool_call_id="q")
    entry = presenters.present_tool_entry(message)
    cells = [cell.text for row in entry.rich.rows for cell in row.cells]
    assert "hunter2-very-secret" not in " ".join(cells) + entry.rich.source
    assert "••••cret" in cells


def test_g20_partial_table_and_details_blocks_escaped(client, user, conversation, feed):
    feed(*call("c", "export_csv", {}, result=CSV))
    feed(*call("o", "lookup", {}, result={"name": SCRIPT, "bio": "line 1\nline 2"}))
    client.force_login(user)
    html = client.get(f"/c/{conversation.pk}/").content.decode()
    table = re.search(r"<table class=\"records\" data-records>.*?</table>", html, re.DOTALL).group(
        0
    )
    assert '<th scope="col" class="num">count</th>' in table and '<td class="num">12</td>' in table
    assert "<script>" not in html and "&lt;script&gt;" in table
    assert 'class="kv-block">line 1\nline 2</dd>' in html
    assert '<span\n  class="json-text-block" data-json-text-block>line 1\nline 2</span>' in html


def test_g20_json_text_escaping_a_lone_surrogate_stays_text(client, user, conversation, feed):
    """`"\\ud800"` in JSON text decodes to no character UTF-8 can write: read as a
    key/value list it made the page a 500 (the AG-UI fuzz's find). It stays the text it
    was sent as; a surrogate pair (one real character) is still read."""
    assert records.parse_json('{"\\ud800": null}') is None
    assert records.parse_json('["x\\udfff"]') is None
    assert records.parse_json('{"smile": "\\ud83d\\ude00"}') == {"smile": "\U0001f600"}
    feed(*call("s", "lookup", {}, result='{"\\ud800": null, "name": "Ada"}'))
    client.force_login(user)
    answer = client.get(f"/c/{conversation.pk}/")
    assert answer.status_code == 200
    assert "\\ud800" in answer.content.decode()
