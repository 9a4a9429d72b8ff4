"""chatui.web.api.JsonAnswer: the API's hot JSON answers, made for less (docs/PERFORMANCE.md#p2),
are Django's JsonResponse byte for byte."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal

import pytest
from django.http import JsonResponse

from chatui.web.api import JsonAnswer, error


@pytest.mark.parametrize(
    ("data", "status"),
    [
        ({"accepted": 1, "duplicates": 0, "last_seq": 42}, 200),
        ({"error": "field 'content' must be a string", "index": 3, "field": "content"}, 400),
        ({"error": 'ünïcødé \u2028 "quoted" </script>', "nested": {"list": [1.5, None]}}, 413),
        (
            {
                "when": datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.UTC),
                "id": uuid.UUID(int=7),
                "amount": Decimal("1.10"),
            },
            201,
        ),
    ],
)
def test_p2_json_answer_is_djangos_json_response_byte_for_byte(data, status):
    ours, django = JsonAnswer(data, status=status), JsonResponse(data, status=status)
    assert ours.status_code == django.status_code
    assert ours.reason_phrase == django.reason_phrase
    assert list(ours.items()) == list(django.items())
    assert ours.content == django.content
    assert ours.charset == django.charset
    assert isinstance(ours, JsonResponse)


def test_p2_an_api_error_is_the_json_response_it_was():
    assert (
        error("nope", 404, field="x").content
        == JsonResponse({"error": "nope", "field": "x"}, status=404).content
    )
