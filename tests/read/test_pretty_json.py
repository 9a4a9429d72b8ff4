"""G8/G16: Details and Copy args print JSON as `json.dumps(indent=2)` does; the
presenter's printer (built once per thread, docs/PERFORMANCE.md#p2) prints the same text."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import threading
import uuid

import pytest

from chatui.read.presenters import pretty_json


class Odd:
    def __str__(self) -> str:
        return 'odd <é> "quoted"'


VALUES = [
    {},
    [],
    'line\u2028sep "quoted" é\n',
    0,
    1.0,
    -0.0,
    1e300,
    math.nan,
    math.inf,
    -math.inf,
    True,
    None,
    {"a": {"b": [1, 2.5, {"c": None, "d": []}, "ü", "\x00"]}},
    {1: "int key", 2.5: "float key", False: "bool key", None: "null key"},
    {"when": datetime.datetime(2026, 1, 1), "d": decimal.Decimal("1.10")},
    {"u": uuid.UUID(int=5), "o": Odd(), "t": (1, 2)},
    [[[]], [{}], {"x": [{}]}],
    {"path": "src/m1.py", "lines": list(range(5))},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_g8_pretty_json_is_the_text_json_dumps_prints(value):
    assert pretty_json(value) == json.dumps(value, indent=2, ensure_ascii=False, default=str)


def test_g8_a_circular_value_still_raises_and_leaves_the_printer_usable():
    looped: list = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference"):
        pretty_json({"a": [looped]})
    assert pretty_json({"a": [1]}) == json.dumps({"a": [1]}, indent=2)


def test_g8_threads_printing_at_once_each_get_their_own_text():
    wrong: list = []

    def work(n: int) -> None:
        value = {"n": n, "items": [{"k": k} for k in range(50)]}
        for _ in range(200):
            if pretty_json(value) != json.dumps(value, indent=2):
                wrong.append(n)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_g8_without_cpythons_private_encoder_maker_the_text_is_the_same(value, monkeypatch):
    """`json.encoder._make_iterencode` is CPython's, not promised: without it the
    printer falls back to the public encoder, and prints the same."""
    from chatui.read import presenters

    monkeypatch.setattr(presenters, "_MAKE_ITERENCODE", None)
    _markers, iterencode = presenters._pretty_encoder()
    expected = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    assert "".join(iterencode(value, 0)) == expected
