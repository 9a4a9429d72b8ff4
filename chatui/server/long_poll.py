"""The approval long poll's own route: a waiting poll holds a coroutine, not a thread."""

from __future__ import annotations

import io
from typing import Any

from django.core.handlers.asgi import ASGIHandler, ASGIRequest
from django.urls import Resolver404, resolve

from chatui.web.approval_views import approval_endpoint

from .ingest_route import finish, insecure_redirect


class LongPollRouter:
    """ASGI: sends `GET …/approvals/{tool_call_id}` straight to the async view.

    Django runs a request through its middleware chain, and while any middleware in it
    is sync-only (WhiteNoise, today) the whole request — an async view included — is
    driven from a thread of its own, parked for as long as the view awaits: 20 waiting
    long polls would hold 20 threads. Routed here, after the edge (which has already
    checked the bearer token and put it in the scope), a waiting poll holds no thread
    at all, only a coroutine. It answers JSON, as the API does, with the same headers
    an API answer gets from the middleware (`ingest_route.finish`), and plain http
    with the middleware's redirect to https when that is on (`insecure_redirect`)."""

    def __init__(self, app: Any):
        self.app = app
        self.responder = app if isinstance(app, ASGIHandler) else ASGIHandler()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        match = self._long_poll(scope)
        if match is None:
            return await self.app(scope, receive, send)
        request = ASGIRequest(scope, io.BytesIO())
        response = insecure_redirect(request) or await approval_endpoint(
            request, *match.args, **match.kwargs
        )
        await self.responder.send_response(finish(request, response), send)

    @staticmethod
    def _long_poll(scope: dict) -> Any:
        if scope["type"] != "http" or scope.get("method") != "GET":
            return None
        if "/approvals/" not in scope["path"]:
            return None  # every other request pays one substring test, not a resolve
        try:
            match = resolve(scope["path"])
        except Resolver404:
            return None
        return match if match.view_name == "api:approval" else None
