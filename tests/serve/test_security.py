"""Trusted hosts, security headers, no absolute paths in responses, the API key (issue 21.3)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from ragfunnel.serve.app import STATIC_DIR
from ragfunnel.serve.redact import public_text
from ragfunnel.serve.security import host_name

pytestmark = pytest.mark.integration

QUESTION = "Who did Rachel dump at the altar?"


@pytest.mark.parametrize("host", ["evil.example.com", "evil.example.com:8000", "127.0.0.1.nip.io", "localhost.evil.org"])
def test_a_foreign_host_is_refused(client, host):
    r = client.post("/search", json={"question": QUESTION}, headers={"Host": host})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_host"
    assert client.get("/", headers={"Host": host}).status_code == 400
    assert "Rachel" not in r.text


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1:8000", "[::1]:8000", "localhost"])
def test_local_hosts_are_served(client, host):
    assert client.get("/health", headers={"Host": host}).status_code == 200


def test_allow_host_adds_a_name(make_app):
    with TestClient(make_app(allow_hosts=["rag.example.org"])) as c:
        assert c.get("/health", headers={"Host": "rag.example.org:443"}).status_code == 200
        assert c.get("/health", headers={"Host": "other.example.org"}).status_code == 400


def test_host_name():
    assert [host_name(h) for h in ("a.org:80", "[::1]:8000", "::1", "A.ORG")] == ["a.org", "::1", "::1", "a.org"]


@pytest.mark.parametrize("path", ["/", "/health", "/static/app.js", "/docs"])
def test_security_headers_on_every_response(client, path):
    r = client.get(path)
    assert r.status_code == 200
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    csp = r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
    if path != "/docs":  # the OpenAPI page's HTML (FastAPI's) has an inline script: the one exception
        assert "unsafe-inline" not in csp and "script-src 'self'" in csp
    assert client.post("/search", json={"question": ""}).headers["x-content-type-options"] == "nosniff"


def test_the_page_has_no_inline_script_or_style():
    html = (STATIC_DIR / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "inline <script>"
    assert "<style" not in html and not re.search(r"\son[a-z]+=", html) and " style=" not in html
    js = (STATIC_DIR / "app.js").read_text()
    assert 'setAttribute("style"' not in js and "innerHTML" not in js


def test_no_absolute_path_in_a_503_or_in_health(make_app, tmp_path):
    from ragfunnel.config import load_settings
    from ragfunnel.generate.llm import FakeLLM
    from ragfunnel.serve.app import create_app

    missing = tmp_path / "deep" / "secret-place" / "index"
    with TestClient(create_app(load_settings(index=missing), llm=FakeLLM(), token="")) as c:
        r = c.post("/search", json={"question": QUESTION})
        assert r.status_code == 503 and "no index" in r.json()["error"]["message"]
        health = c.get("/health")
    for text in (r.text, health.text):
        assert str(tmp_path) not in text and "secret-place" not in text and "/tmp/" not in text


def test_public_text_cuts_paths_to_their_names():
    assert public_text("no index at /home/u/.ragfunnel/index: build it") == "no index at …/index: build it"
    assert public_text("the file C:\\Users\\u\\x.gguf is gone") == "the file …/x.gguf is gone"
    assert public_text("POST /search and http://localhost:8000/a/b stay") == "POST /search and http://localhost:8000/a/b stay"


def test_api_key_as_bearer_or_x_api_key(make_app):
    with TestClient(make_app(token="k3y")) as c:
        assert c.post("/search", json={"question": QUESTION}).status_code == 401
        assert c.post("/search", json={"question": QUESTION}, headers={"X-API-Key": "k3y"}).status_code == 200
        assert c.post("/search", json={"question": QUESTION}, headers={"Authorization": "Bearer k3y"}).status_code == 200
        assert c.get("/health").status_code == 200
