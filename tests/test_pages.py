"""Pages: login required, own conversations only, the transcript rendered server-side."""

from __future__ import annotations

from chatui.ingest import ingest
from tests.conftest import load_fixture


def test_conversation_page_renders_the_recorded_run(client, user, conversation):
    ingest(conversation, load_fixture("recorded_run.json"))
    client.force_login(user)
    response = client.get(conversation.get_absolute_url())
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="transcript"' in html
    assert 'data-last-seq="21"' in html
    assert "data-tool-batch" in html
