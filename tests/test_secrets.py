"""No secret leaves the process: a run against a loopback echo server, then every byte of the
run folder (SQLite pages included) and everything printed or logged is searched for the API key,
the URL's password / Basic credential and a query secret, in plain, percent-encoded and base64 form."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from urllib.parse import quote, quote_plus

import numpy as np
import pytest
import yaml

from helpers.http_peer import ECHO, HTTPPeer
from tempcore.cli import main
from tempcore.redaction import (
    REDACTED,
    is_secret_param,
    redact_secrets,
    redact_text,
    redact_url,
    secret_variants,
    url_secrets,
)
from tempcore.video.synthetic import write_video

KEY = "sk-envkey-0123456789abcdefXYZ"
PASSWORD = "pw-s3cret-Q7"
USER = "bobuser"
QUERY = "qsecret-4242-ZZ"


def _forms(secret: str) -> set[bytes]:
    raw = secret.encode()
    out = {secret, quote(secret, safe=""), quote_plus(secret)}
    for enc in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        out |= {enc.decode(), enc.decode().rstrip("=")}
    return {o.encode() for o in out} | {o.encode("utf-16-le") for o in out}


SECRETS = {name: _forms(value) for name, value in
           {"key": KEY, "password": PASSWORD, "basic": f"{USER}:{PASSWORD}", "query": QUERY}.items()}


def _leaks(blob: bytes) -> list[str]:
    return sorted({name for name, forms in SECRETS.items() for f in forms if f in blob})


def test_run_against_echo_server_leaks_no_secret(tmp_path: Path, monkeypatch, capsys, caplog) -> None:
    videos = tmp_path / "videos"
    videos.mkdir()
    rows = []
    for i in range(4):
        write_video(videos / f"v{i}.mp4", fps=10, duration=1.0, size=(32, 32),
                    make_frame=lambda n, t, i=i: np.full((32, 32, 3), 40 * i, np.uint8))
        rows.append({"id": f"q{i}", "video": f"v{i}.mp4", "question": "Which?", "options": ["a", "b"], "answer": 0})
    ann = tmp_path / "bench.jsonl"
    ann.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("TEMPCORE_SECRET_TEST_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    # every other request is answered with a 400 whose message repeats the request line and headers
    with HTTPPeer(faults=lambda r: ECHO if r.index % 2 == 0 else None) as peer:
        base_url = f"http://{USER}:{PASSWORD}@127.0.0.1:{peer.port}/v1?api-key={QUERY}"
        out = tmp_path / "run"
        cfg = {
            "out": str(out),
            "k": 2,
            "fps": 5,
            "benchmarks": [{"name": "generic", "annotations": str(ann), "video_root": str(videos)}],
            "models": [{"backend": "openai", "model": "m", "name": "served", "base_url": base_url,
                        "api_key_env": "TEMPCORE_SECRET_TEST_KEY", "max_retries": 0}],
            "conditions": [{"strategy": "uniform"}, {"strategy": "noframe"}],
        }
        cfg_path = tmp_path / "run.yaml"
        cfg_path.write_text(yaml.safe_dump(cfg))
        main(["run", "--config", str(cfg_path), "--no-progress"])
        main(["run", "--config", str(cfg_path), "--no-progress", "--json"])  # resume: failures retried
        received = list(peer.received)
    # the server got the key as Bearer, the query where it belongs, and no Basic header
    assert received and {r.headers.get("authorization") for r in received} == {f"Bearer {KEY}"}
    assert {r.target for r in received} == {f"/v1/chat/completions?api-key={QUERY}"}
    echoed = [r for r in received if r.index % 2 == 0]
    assert echoed  # the echo path was exercised: the failures table holds server-echoed errors
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name.startswith("store.sqlite") for p in files)
    leaks = {str(p.relative_to(out)): _leaks(p.read_bytes()) for p in files}
    assert {k: v for k, v in leaks.items() if v} == {}
    printed = capsys.readouterr()
    assert _leaks((printed.out + printed.err + caplog.text).encode()) == []
    import sqlite3

    with sqlite3.connect(out / "store.sqlite") as db:
        errors = [e for (e,) in db.execute("SELECT error FROM failures")]
    assert errors and all(REDACTED in e for e in errors)  # the echo was stored, redacted


@pytest.mark.parametrize(
    "text,secrets,expected",
    [
        ("http://bob:pw@h:1/v1?api-key=QQQQ&model=x", (), f"http://{REDACTED}@h:1/v1?api-key={REDACTED}&model=x"),
        ("GET /v1?key=abcd&token=efgh&k=1", (), f"GET /v1?key={REDACTED}&token={REDACTED}&k=1"),
        ("authorization: Basic Ym9iOnB3ZA== next", (), f"authorization: Basic {REDACTED} next"),
        ("Authorization: Bearer abc.def-1", (), f"Authorization: Bearer {REDACTED}"),
        ('{"x-api-key": "zzzz"}', (), f'{{"x-api-key": "{REDACTED}"}}'),
        ("key KEYVALUE1 S0VZVkFMVUUx KEYVALUE1%21", ("KEYVALUE1",), f"key {REDACTED} {REDACTED} {REDACTED}%21"),
        ("a basic idea; Token limit 5", (), "a basic idea; Token limit 5"),
        ("token sk-abcdefghijklmnopqrstu end", (), f"token {REDACTED} end"),
    ],
)
def test_redact_text(text: str, secrets: tuple[str, ...], expected: str) -> None:
    assert redact_text(text, secrets) == expected


def test_url_secrets_and_params() -> None:
    assert set(url_secrets("http://bob:p%40ss@h/v1?key=abc&model=x")) == {"p%40ss", "p@ss", "bob:p%40ss", "bob:p@ss", "abc"}
    assert url_secrets("http://h/v1") == []
    assert redact_url("http://bob:pw@h/v1?key=abc&model=x", "***") == "http://***@h/v1?key=***&model=x"
    for name in ("api-key", "api_key", "key", "token", "access_token", "sig", "X-Api-Key", "apikey"):
        assert is_secret_param(name), name
    for name in ("model", "max_tokens", "api-version", "k"):
        assert not is_secret_param(name), name
    assert {"abc", "YWJj"} <= secret_variants("abc")


def test_redact_secrets_strings_and_known_values() -> None:
    data = {"base_url": "https://u:p@h/v1?api-key=Q", "args": ["--api-key", "X", "--token=Y"], "note": "K1234 here"}
    assert redact_secrets(data, ["K1234"]) == {
        "base_url": f"https://{REDACTED}@h/v1?api-key={REDACTED}",
        "args": ["--api-key", REDACTED, f"--token={REDACTED}"],
        "note": f"{REDACTED} here",
    }


def test_prose_is_not_mistaken_for_credentials() -> None:
    text = "Basic reasoning: the bearer of the cup. Basic test"
    assert redact_text(text) == text
    basic = base64.b64encode(b"u:p").decode()
    assert redact_text(f"Basic {basic}") == f"Basic {REDACTED}"
