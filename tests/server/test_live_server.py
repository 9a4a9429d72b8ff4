"""The end-to-end harness itself: a real daphne serving the API and static files."""

from __future__ import annotations

import httpx


def test_chatui_server_serves_the_api_with_a_token(chatui_server):
    conversation_id = chatui_server.new_conversation("harness")
    result = chatui_server.post_events(conversation_id, {"type": "user.message", "content": "hi"})
    assert result == {"accepted": 1, "duplicates": 0, "last_seq": 1}
    with chatui_server.api() as client:
        body = client.get(f"/conversations/{conversation_id}").json()
    assert [m["content"] for m in body["messages"]] == ["hi"]


def test_chatui_server_sets_security_headers(chatui_server):
    response = httpx.get(chatui_server.url + "/accounts/login/")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
