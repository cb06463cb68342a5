"""The page's security: the token, the Host check, CSRF, read-only, headers, and hostile memory text."""

from __future__ import annotations

import os
import re
import socket
import stat
from pathlib import Path

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from daemon.ui.security import CSP, TOKEN_FILE, TokenError, allowed_hosts, cookie_name, load_or_create_token
from tests.daemon.ui.conftest import ADDRESS, PORT, Opener, page_app
from tests.daemon.ui.support import HOSTILE, Prepared

PAGES = ["/", "/memory", "/inbox", "/sessions", "/memory/search?q=x", "/static/memd.css"]


def test_the_token_is_made_once_private_and_not_followed_through_a_symlink(tmp_path: Path) -> None:
    state = tmp_path / "state"
    token = load_or_create_token(state)
    assert len(token) >= 40
    assert stat.S_IMODE((state / TOKEN_FILE).stat().st_mode) == 0o600
    assert load_or_create_token(state) == token
    (state / TOKEN_FILE).chmod(0o644)
    with pytest.raises(TokenError, match="chmod 600"):
        load_or_create_token(state)
    (state / TOKEN_FILE).unlink()
    (tmp_path / "elsewhere").write_text("x" * 64)
    os.symlink(tmp_path / "elsewhere", state / TOKEN_FILE)
    with pytest.raises(TokenError, match="symbolic link"):
        load_or_create_token(state)


@pytest.mark.parametrize("path", PAGES)
def test_every_page_needs_the_token(shared: Prepared, open_page: Opener, path: str) -> None:
    _, client = open_page(shared, login=False)
    response = client.get(path)
    assert response.status_code == 401
    assert "memd ui" in response.text
    assert memory_text_absent(response.text, shared)


def memory_text_absent(text: str, prepared: Prepared) -> bool:
    return prepared.acme not in text and "make test" not in text


def test_a_wrong_token_is_refused_and_a_right_one_becomes_a_strict_http_only_cookie(
    shared: Prepared, open_page: Opener
) -> None:
    context, client = open_page(shared, login=False)
    assert client.get("/?token=wrong").status_code == 401
    first = client.get(f"/sessions?state=skipped&token={context.guard.token}", follow_redirects=False)
    assert first.status_code == 303
    assert first.headers["location"] == "/sessions?state=skipped"  # the token leaves the address
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(PORT)}={context.guard.token};")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie
    assert client.get("/sessions").status_code == 200  # the cookie is enough from now on
    client.cookies.clear()
    client.cookies.set(cookie_name(PORT), "forged")
    assert client.get("/sessions").status_code == 401


@pytest.mark.parametrize(
    "host", ["evil.example:8399", "127.0.0.1:9999", "memd.attacker.test", "localhost.evil.test:8399", ""]
)
def test_a_wrong_host_header_is_refused_even_with_the_token(
    shared: Prepared, open_page: Opener, host: str
) -> None:
    context, client = open_page(shared)
    response = client.get("/", headers={"host": host})
    assert response.status_code == 421
    with_token = client.get(f"/?token={context.guard.token}", headers={"host": host})
    assert with_token.status_code == 421
    assert client.get("/", headers={"host": f"localhost:{PORT}"}).status_code == 200


def _post_routes(app: object) -> list[str]:
    return [r.path for r in app.routes if isinstance(r, Route) and r.methods and "POST" in r.methods]  # type: ignore[attr-defined]


def test_every_post_without_the_csrf_token_is_refused_and_changes_nothing(
    fresh: Prepared, open_page: Opener
) -> None:
    context, client = open_page(fresh)
    posts = _post_routes(client.app)
    assert sorted(posts) == [
        "/forget",
        "/inbox/accept",
        "/inbox/reject",
        "/memory/edit",
        "/memory/forget",
        "/memory/pin",
    ]
    fields = {
        "run": fresh.accept_run,
        "session": fresh.forget_session,
        "scope": fresh.acme,
        "file": "testing.md",
        "body": "replaced",
        "pinned": "true",
    }
    for path in posts:
        for csrf in (None, "", "0" * 64, context.guard.token):
            data = fields | ({"csrf": csrf} if csrf is not None else {})
            response = client.post(path, data=data)
            assert response.status_code == 403, (path, csrf)
            assert "CSRF" in response.text
    assert fresh.accept_run in client.get("/inbox").text
    assert "testing.md" in client.get("/memory/scope", params={"scope": fresh.acme}).text
    topic = client.get("/memory/topic", params={"scope": fresh.acme, "file": "testing.md"}).text
    assert "Run <code>make test</code>." in topic
    assert 'id="pinned"' not in topic


def test_state_changes_only_by_post_and_no_cors(shared: Prepared, open_page: Opener) -> None:
    context, client = open_page(shared)
    assert (
        client.get("/inbox/accept", params={"run": shared.accept_run, "csrf": context.guard.csrf}).status_code
        == 405
    )
    for method in ("PUT", "DELETE", "PATCH", "OPTIONS"):
        response = client.request(method, "/inbox/accept", headers={"origin": "http://evil.example"})
        assert response.status_code == 405, method
        assert not any(h.startswith("access-control-") for h in response.headers)
    page = client.get("/", headers={"origin": "http://evil.example"})
    assert not any(h.startswith("access-control-") for h in page.headers)


def test_a_post_from_another_origin_is_refused(fresh: Prepared, open_page: Opener) -> None:
    context, client = open_page(fresh)
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{PORT + 1}"):
        response = client.post(
            "/inbox/reject",
            data={"csrf": context.guard.csrf, "run": fresh.reject_run},
            headers={"origin": origin},
        )
        assert response.status_code == 403, origin
    assert fresh.reject_run in client.get("/inbox").text
    same = client.post(
        "/inbox/reject",
        data={"csrf": context.guard.csrf, "run": fresh.reject_run},
        headers={"origin": f"http://127.0.0.1:{PORT}"},
    )
    assert same.status_code == 200


@pytest.mark.parametrize("path", PAGES)
def test_every_answer_carries_a_strict_csp_and_the_other_headers(
    shared: Prepared, open_page: Opener, path: str
) -> None:
    _, client = open_page(shared)
    for response in (
        client.get(path),
        client.get(path, headers={"cookie": f"{cookie_name(PORT)}=x"}),
        client.get(path, headers={"host": "x"}),
    ):
        assert response.headers["content-security-policy"] == CSP
        assert "script-src 'none'" in CSP
        assert "default-src 'none'" in CSP
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["referrer-policy"] == "same-origin"
        assert response.headers["x-content-type-options"] == "nosniff"


def test_no_page_carries_a_script_or_an_inline_style(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    for path in ["/", "/memory", "/inbox", "/sessions", f"/memory/scope?scope={shared.acme}"]:
        html = client.get(path).text.lower()
        for forbidden in ("<script", " style=", "javascript:"):
            assert forbidden not in html, (path, forbidden)


def test_a_hostile_topic_file_shows_as_text(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    html = client.get("/memory/topic", params={"scope": shared.acme, "file": "hostile.md"}).text
    assert "<script" not in html.lower()
    assert (
        "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;" in html
        or "&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;" in html
    )
    assert "Evil &lt;script&gt;alert(1)&lt;/script&gt;" in html  # the frontmatter name, escaped
    assert "<img" not in html
    assert "onerror=alert" not in html.replace("&lt;img src=x onerror=alert(2)&gt;", "")
    assert 'href="javascript:' not in html
    listing = client.get("/memory/scope", params={"scope": shared.acme}).text
    assert (
        "<script" not in listing.lower()
        and "&lt;b&gt;bold&lt;/b&gt;" not in listing
        or "<b>bold" not in listing
    )
    found = client.get("/memory/search", params={"q": "owned"}).text
    assert "<script" not in found.lower()
    assert HOSTILE not in found


def test_a_topic_files_links_away_and_images_show_as_text(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    html = client.get("/memory/topic", params={"scope": shared.acme, "file": "hostile.md"}).text
    attributes = re.findall(r'(?:href|src)="([^"]*)"', html)
    assert not [a for a in attributes if "evil" in a or "data:" in a or a.startswith("//")], attributes
    assert "<img" not in html
    assert html.count("evil.example") >= 6  # what the links said, as text
    assert [
        a for a in attributes if a.startswith("/memory/topic?") and "file=testing.md" in a
    ]  # stays a link


def test_read_only_mode_refuses_every_change_and_offers_none(fresh: Prepared, open_page: Opener) -> None:
    context, client = open_page(fresh, read_only=True)
    assert "read-only" in client.get("/").text
    run = client.get("/inbox/run", params={"id": fresh.accept_run}).text
    assert 'action="/inbox/accept"' not in run
    assert (
        'id="forget-session"'
        not in client.get("/sessions/detail", params={"session": fresh.forget_session}).text
    )
    for path in _post_routes(client.app):
        response = client.post(
            path, data={"csrf": context.guard.csrf, "run": fresh.accept_run, "session": fresh.forget_session}
        )
        assert response.status_code == 403, path
        assert "read-only" in response.text
    assert fresh.accept_run in client.get("/inbox").text
    assert "testing.md" in client.get("/memory/scope", params={"scope": fresh.acme}).text
    topic = client.get("/memory/topic", params={"scope": fresh.acme, "file": "testing.md"}).text
    assert "Run <code>make test</code>." in topic
    assert 'id="pinned"' not in topic


def test_bad_addresses_of_memory_are_refused_not_followed(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    for params in (
        {"scope": shared.acme, "file": "../../etc/passwd"},
        {"scope": shared.acme, "file": "/etc/passwd"},
        {"scope": "../x", "file": "a.md"},
        {"scope": shared.acme, "file": "--output=/tmp/x"},
    ):
        assert client.get("/memory/topic", params=params).status_code == 404, params
        assert client.get("/memory/history", params=params).status_code == 404, params
    bad_commit = {"scope": shared.acme, "file": "testing.md", "to": "--output=/tmp/x"}
    assert client.get("/memory/diff", params=bad_commit).status_code == 400
    assert client.get("/memory/diff", params=bad_commit | {"to": "HEAD"}).status_code == 400


def test_healthz_answers_without_the_token_and_names_no_secret(shared: Prepared) -> None:
    context, app = page_app(shared)
    with TestClient(app, base_url=ADDRESS) as client:  # type: ignore[arg-type]
        found = client.get("/healthz").json()
        assert found == {"service": "memd-ui", "id": context.guard.public_id, "read_only": False}
        assert context.guard.token not in client.get("/healthz").text
        assert client.get("/healthz", headers={"host": "evil.example"}).status_code == 421


def test_the_hosts_answered_are_the_listening_address_and_loopbacks_names() -> None:
    assert allowed_hosts("127.0.0.1", 8377) == {"127.0.0.1:8377", "localhost:8377", "[::1]:8377"}
    assert allowed_hosts("192.168.1.5", 80) == {"192.168.1.5:80"}
    assert allowed_hosts("fe80::1", 9) == {"[fe80::1]:9"}
    everywhere = allowed_hosts("0.0.0.0", 9)
    assert f"{socket.gethostname()}:9" in everywhere
    assert "localhost:9" in everywhere
    assert "evil.example:9" not in everywhere
