"""Links and images in rendered memory: only links to memd's own pages (a topic file beside this one,
a heading on the page) stay links; anything that leaves the page (a host, a scheme, a protocol-relative
or backslashed path) and every image show as text."""

from __future__ import annotations

import re

import pytest

from daemon.ui.render import markdown


def topic(href: str) -> str:
    return "/memory/topic?file=" + href


def rendered(text: str) -> str:
    return str(markdown(text, relative=topic))


def hrefs(html: str) -> list[str]:
    return re.findall(r'<a [^>]*href="([^"]*)"', html)


HOSTILE_LINKS = [
    "[a](//evil.example/x)",
    "[a](\\\\evil.example/x)",
    "[a](/\\evil.example/x)",
    "[a](\\/\\/evil.example/x)",
    "[a](HTTPS://evil.example/x)",
    "[a](https://evil.example/x)",
    "[a](http://evil.example/x)",
    "[a](https:evil.example)",
    "[a](mailto:someone@evil.example)",
    "[a](javascript:alert(1))",
    "[a](JaVaScRiPt:alert(1))",
    "[a](data:text/html,evil.example)",
    "[a](&#47;&#47;evil.example/x)",
    "[a](&#x2F;/evil.example/x)",
    "[a](ht&#116;ps://evil.example/x)",
    "[a](<//evil.example/x>)",
    "[a]( //evil.example/x )",
    "[a](//evil.example/x 'a title')",
    "[a](%2F%2Fevil.example/x)",
    "[a](/%5Cevil.example/x)",
    "[a](/inbox/accept)",
    "[a][ref]\n\n[ref]: //evil.example/ref",
    "[a][ref]\n\n[ref]: https://evil.example/ref",
    "[a]\n\n[a]: <//evil.example/ref>",
    "<http://evil.example/auto>",
    "<HTTPS://evil.example/auto>",
    "<mailto:someone@evil.example>",
    "<someone@evil.example>",
    "# heading [a](//evil.example/x)",
    "| t |\n|---|\n| [a](//evil.example/x) |",
]

HOSTILE_IMAGES = [
    "![alt](https://evil.example/i.png)",
    "![alt](//evil.example/i.png)",
    "![alt](HTTPS://evil.example/i.png)",
    "![alt](data:image/png;base64,iVBORw0KGgo=)",
    "![alt](&#47;&#47;evil.example/i.png)",
    "![alt](i.png)",
    "![alt][img]\n\n[img]: //evil.example/i.png",
    "[![alt](https://evil.example/i.png)](https://evil.example/)",
    '<img src="https://evil.example/i.png">',
    "<img src=//evil.example/i.png onerror=alert(1)>",
]


@pytest.mark.parametrize("text", HOSTILE_LINKS)
def test_a_link_that_leaves_the_page_shows_as_text(text: str) -> None:
    html = rendered(text)
    assert hrefs(html) == [], html
    assert any(said in html for said in ("evil.example", "alert(1)", "/inbox/accept"))  # as text


@pytest.mark.parametrize("text", HOSTILE_IMAGES)
def test_no_image_is_rendered_whatever_its_source(text: str) -> None:
    html = rendered(text)
    assert "<img" not in html, html
    assert re.findall(r"<[a-z][^>]* src=", html) == [], html
    assert hrefs(html) == [], html


def test_links_to_memds_own_pages_stay_links() -> None:
    html = rendered("see [testing](testing.md), [its part](testing.md#setup) and [above](#top)")
    assert hrefs(html) == [topic("testing.md"), topic("testing.md"), "#top"]
    summary = str(markdown("see [testing](testing.md)"))
    assert hrefs(summary) == ["testing.md"]


def test_a_bare_address_was_never_a_link_and_stays_text() -> None:
    html = rendered("docs at https://evil.example/bare and www.evil.example")
    assert hrefs(html) == []
    assert "https://evil.example/bare" in html


def test_raw_html_stays_text() -> None:
    html = rendered('<a href="//evil.example/">x</a> <iframe src="//evil.example/"></iframe>')
    assert hrefs(html) == []
    assert "<iframe" not in html
    assert "&lt;a href=" in html
