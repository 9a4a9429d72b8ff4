"""docs/PERFORMANCE.md#p2: the routed events POST's request and answer are made cheaply
(chatui.server.ingest_route.RoutedRequest, `on_the_wire`), and are what Django's own
request and the middleware's headers would have been."""

from __future__ import annotations

import io

import pytest
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, JsonResponse
from django.test import override_settings
from django.views.decorators.clickjacking import xframe_options_exempt

from chatui.server.ingest_route import (
    RoutedRequest,
    _request_for,
    _wire_headers,
    finish,
    on_the_wire,
)

PATH = "/api/v1/conversations/15cb6845-3282-4ce3-9f8e-45b096547269/events"


def scope(*headers: tuple[bytes, bytes], scheme: str = "http", root_path: str = "") -> dict:
    return {
        "type": "http",
        "method": "POST",
        "scheme": scheme,
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "root_path": root_path,
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
    }


def long_way(request, response) -> tuple[int, list, bytes]:
    finished = finish(request, response)
    return finished.status_code, _wire_headers(finished), finished.content


def short_way(request, response) -> tuple[int, list, bytes]:
    start, body = on_the_wire(request, response)
    return start["status"], start["headers"], body["body"]


def answers() -> list[HttpResponse]:
    refused = JsonResponse({"error": "method GET is not allowed; use POST"}, status=405)
    refused["Allow"] = "POST"
    unauthorised = JsonResponse({"error": "missing or invalid bearer token"}, status=401)
    unauthorised["WWW-Authenticate"] = 'Bearer realm="chatui"'
    return [
        JsonResponse({"accepted": 1, "duplicates": 0, "last_seq": 7}),
        JsonResponse({"error": "request body is larger than 10 bytes"}, status=413),
        refused,
        unauthorised,
        xframe_options_exempt(lambda request: JsonResponse({"framed": True}))(None),
        HttpResponse("plain", content_type="text/plain"),
    ]


@pytest.mark.parametrize("index", range(len(answers())))
def test_p2_routed_answer_has_the_headers_the_middleware_gives_it_first_time_and_after(index):
    request = RoutedRequest(scope(), b"{}")
    for _ in range(2):  # worked out, then remembered
        assert short_way(request, answers()[index]) == long_way(request, answers()[index])


def test_p2_routed_answer_follows_a_changed_setting_of_the_middleware():
    request = RoutedRequest(scope(), b"{}")
    short_way(request, JsonResponse({}))
    with override_settings(X_FRAME_OPTIONS="SAMEORIGIN"):
        _status, headers, _body = short_way(request, JsonResponse({}))
        assert (b"X-Frame-Options", b"SAMEORIGIN") in headers
        assert headers == long_way(request, JsonResponse({}))[1]
    assert (b"X-Frame-Options", b"DENY") in short_way(request, JsonResponse({}))[1]


def test_p2_routed_answer_to_a_secure_request_gets_hsts_as_through_the_middleware():
    with override_settings(SECURE_HSTS_SECONDS=3600):
        plain, secure = RoutedRequest(scope(), b"{}"), RoutedRequest(scope(scheme="https"), b"{}")
        for request in (plain, secure, plain, secure):
            assert short_way(request, JsonResponse({})) == long_way(request, JsonResponse({}))
        assert b"Strict-Transport-Security" in dict(short_way(secure, JsonResponse({}))[1])
        assert b"Strict-Transport-Security" not in dict(short_way(plain, JsonResponse({}))[1])


def with_cookie() -> HttpResponse:
    response = JsonResponse({})
    response.set_cookie("seen", "1")
    return response


def with_length() -> HttpResponse:
    response = JsonResponse({})
    response["Content-Length"] = "2"
    return response


@pytest.mark.parametrize("make", [with_cookie, with_length])
def test_p2_routed_answer_with_a_cookie_or_its_own_length_is_as_through_the_middleware(make):
    request = RoutedRequest(scope(), b"{}")
    assert short_way(request, make()) == long_way(request, make())


@pytest.mark.parametrize(
    "headers",
    [
        [(b"content-type", b"application/json"), (b"content-length", b"2")],
        [(b"content-type", b"application/json; charset=utf-8")],
        [(b"content-type", b"text/plain"), (b"content-type", b"x"), (b"x-a", b"1")],
        [],
    ],
)
def test_p2_routed_request_reads_as_djangos_asgi_request(headers):
    routed = RoutedRequest(scope(*headers), b"{}")
    django = ASGIRequest(scope(*headers), io.BytesIO(b"{}"))
    assert routed.body == django.body
    assert (routed.method, routed.path, routed.path_info) == (
        django.method,
        django.path,
        django.path_info,
    )
    assert (routed.content_type, routed.content_params) == (
        django.content_type,
        django.content_params,
    )
    assert routed.encoding == django.encoding
    assert routed.declared_length == django.META.get("CONTENT_LENGTH")
    assert "META" not in routed.__dict__  # not made for what the view reads
    assert routed.META == django.META  # and made, alike, when asked for


def test_p2_routed_request_under_a_script_prefix_is_djangos_own():
    request = _request_for(scope(root_path="/chat"), b"{}")
    assert not isinstance(request, RoutedRequest)
    assert request.path_info == ASGIRequest(scope(root_path="/chat"), io.BytesIO()).path_info


@pytest.mark.parametrize(
    "forwarded",
    [[], [b"https"], [b"http"], [b" https , http"], [b"http", b"https"], [b"HTTPS"]],
)
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_p2_routed_request_behind_a_proxy_is_secure_as_djangos_without_making_meta(
    forwarded, scheme
):
    headers = [(b"x-forwarded-proto", value) for value in forwarded]
    with override_settings(SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https")):
        routed = RoutedRequest(scope(*headers, scheme=scheme), b"{}")
        django = ASGIRequest(scope(*headers, scheme=scheme), io.BytesIO(b"{}"))
        assert (routed.scheme, routed.is_secure()) == (django.scheme, django.is_secure())
        assert "META" not in routed.__dict__
