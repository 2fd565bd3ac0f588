"""The one place secrets are removed from what tempcore stores or prints.

Everything that leaves the process (run manifests, the failures table, error messages, logs)
goes through :func:`redact_secrets` (JSON-like values) or :func:`redact_text` (a string), which
share one set of rules:

* **Mapping keys** that name a secret (:func:`is_secret_key`: ``api_key``, ``x-api-key``,
  ``token``, ``password``, ``authorization`` ...) have their value replaced by :data:`REDACTED`.
* **URL user info**: ``scheme://user:pass@host`` becomes ``scheme://<redacted>@host`` (the user
  name goes too: with the password it is the Basic credential).
* **Query parameters** whose names look like keys or tokens (:func:`is_secret_param`:
  ``api-key``, ``api_key``, ``key``, ``token``, ``access_token``, ``sig``, ``signature``,
  ``password`` ...): ``?api-key=XYZ`` becomes ``?api-key=<redacted>``, in URLs and in any text
  that quotes a query string.
* **Authorization values**: ``Bearer XYZ...`` (6 characters or more) and ``Basic dXNlcjpwYXNz``
  (a value that decodes to ``user:password``) keep their scheme, lose their value; so does the
  value after ``Authorization:`` / ``x-api-key:`` / ``api-key:`` / ``cookie:`` header names.
* **Known secrets** (the API key read from the environment, a URL's password and
  ``user:password``): every occurrence in plain text, percent-encoded (``quote`` and
  ``quote_plus``), and base64 (standard and URL-safe, with and without padding; Basic auth is
  ``base64(user:password)``) is replaced. Secrets shorter than :data:`MIN_SECRET_LEN`
  characters are not searched for as bare text (replacing every ``"a"`` would destroy the
  text); they are still removed wherever the rules above find them.
* **Credential-shaped strings** (``sk-...``, ``hf_...``): a JSON string value that *is* one is
  replaced whole; inside longer text the token itself is replaced.

In lists of command-line arguments the value after a secret flag (``--api-key XYZ``) and the
value of ``--api-key=XYZ`` are redacted too. The functions copy; inputs are never modified.
:class:`RedactingFilter` applies :func:`redact_text` to log records.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit

REDACTED = "<redacted>"
#: shortest known secret searched for as bare text
MIN_SECRET_LEN = 4

_SECRET_WORDS = {
    "password",
    "passwd",
    "secret",
    "authorization",
    "apikey",
    "cookie",
    "credential",
    "credentials",
}
_NOT_SECRET_SUFFIXES = {"env", "var", "envvar", "name", "file", "path", "type", "url"}
_PARAM_WORDS = {"key", "token", "sig", "signature", "pass", "pwd", "auth", "code", "session"}
_SECRET_VALUE = re.compile(
    r"^(bearer|basic)\s+\S+"  # an HTTP authorization header value
    r"|\bsk-[A-Za-z0-9_\-]{16,}"  # OpenAI-style keys
    r"|\bhf_[A-Za-z0-9]{20,}",  # Hugging Face tokens
    re.IGNORECASE,
)
_TOKEN_IN_TEXT = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}|\bhf_[A-Za-z0-9]{20,}")
_SECRET_FLAG = re.compile(r"^--?([A-Za-z0-9_\-]+)(=.*)?$")
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/@\s?#\"'<>]+)@")
_QUERY_PARAM = re.compile(r"(?P<lead>[?&;](?P<name>[A-Za-z0-9_.\-%]+)=)(?P<value>[^&#\s\"'<>]*)")
_AUTH_SCHEME = re.compile(
    r"\b(?P<scheme>[Bb]earer|BEARER)(?P<sep>\s+)(?P<value>[A-Za-z0-9._~+/=\-]{6,})"
    r"|\b(?P<bscheme>Basic|BASIC)(?P<bsep>\s+)(?P<bvalue>[A-Za-z0-9+/]{4,}={0,2})"
)
_AUTH_HEADER = re.compile(
    r"(?P<name>\b(?:proxy-)?authorization|\bx-api-key|\bapi-key|\bcookie)(?P<sep>['\"]?\s*:\s*['\"]?)"
    r"(?!(?:Bearer|Basic|bearer|BEARER|BASIC)\s)(?P<value>[^\s'\",;&]+)",
    re.I,
)


def _parts(name: str) -> list[str]:
    snake = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return [p for p in re.split(r"[^a-z0-9]+", snake) if p]


def is_secret_key(name: str) -> bool:
    """Whether a mapping key names a secret: api_key, x-api-key, token, hf_token, password, authorization...

    Keys that only *name* where a secret lives (``api_key_env``, ``token_file``, ``token_type``) and
    counts such as ``max_new_tokens`` are not secrets.
    """
    parts = _parts(name)
    if not parts or parts[-1] in _NOT_SECRET_SUFFIXES:
        return False
    if _SECRET_WORDS & set(parts) or parts[-1] == "token":
        return True
    pairs = set(zip(parts, parts[1:]))
    return bool(
        pairs & {("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("auth", "key")}
    )


def is_secret_param(name: str) -> bool:
    """Whether a URL query parameter names a secret: everything :func:`is_secret_key` flags plus
    parameters whose last word is ``key``, ``token``, ``sig``, ``signature``, ``pass``, ``pwd``,
    ``auth``, ``code`` or ``session`` (``?key=`` as Google APIs use, ``?api-key=`` as Azure does)."""
    name = unquote(name)
    parts = _parts(name)
    return is_secret_key(name) or bool(parts and parts[-1] in _PARAM_WORDS)


def secret_variants(secret: str) -> set[str]:
    """The forms a secret may take in stored or printed text: plain, percent-encoded, base64."""
    if not secret:
        return set()
    raw = secret.encode("utf-8", "surrogatepass")
    out = {secret, quote(secret, safe=""), quote_plus(secret, safe="")}
    for enc in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = enc.decode("ascii")
        out.update({text, text.rstrip("=")})
    return {v for v in out if v}


def url_secrets(url: str | None) -> list[str]:
    """The secrets a URL carries: its password, ``user:password`` (the Basic credential, also
    percent-decoded) and the values of query parameters that :func:`is_secret_param` flags."""
    if not url:
        return []
    try:
        parts = urlsplit(str(url))
        user, password = parts.username, parts.password
    except ValueError:
        return []
    found: list[str] = []
    if password:
        found += [password, unquote(password)]
    if user is not None and password is not None:
        found += [f"{user}:{password}", f"{unquote(user)}:{unquote(password)}"]
    for m in _QUERY_PARAM.finditer("?" + parts.query if parts.query else ""):
        if is_secret_param(m.group("name")) and m.group("value"):
            found += [m.group("value"), unquote(m.group("value"))]
    return list(dict.fromkeys(found))


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with URL user info, secret query values, Authorization values, credential-shaped
    tokens and every variant (:func:`secret_variants`) of the given ``secrets`` replaced."""
    if not isinstance(text, str) or not text:
        return text
    known: set[str] = set()
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_LEN:
            known |= {v for v in secret_variants(secret) if len(v) >= MIN_SECRET_LEN}
    for variant in sorted(known, key=len, reverse=True):  # longest first: "user:pass" before "pass"
        text = text.replace(variant, REDACTED)
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    text = _QUERY_PARAM.sub(
        lambda m: (
            f"{m.group('lead')}{REDACTED}"
            if is_secret_param(m.group("name")) and m.group("value")
            else m.group(0)
        ),
        text,
    )
    text = _AUTH_SCHEME.sub(_auth_value, text)
    text = _AUTH_HEADER.sub(lambda m: f"{m.group('name')}{m.group('sep')}{REDACTED}", text)
    return _TOKEN_IN_TEXT.sub(REDACTED, text)


def _auth_value(m: re.Match[str]) -> str:
    """A ``Bearer`` token, or a ``Basic`` value that decodes to ``user:password`` (so prose such as
    "Basic reasoning" is left alone), loses its value."""
    if m.group("scheme"):
        return f"{m.group('scheme')}{m.group('sep')}{REDACTED}"
    value = m.group("bvalue")
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (ValueError, binascii.Error):
        return m.group(0)
    if b":" not in decoded:
        return m.group(0)
    return f"{m.group('bscheme')}{m.group('bsep')}{REDACTED}"


def redact_url(url: str, placeholder: str = REDACTED) -> str:
    """``url`` with user info and secret query values replaced by ``placeholder``."""
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{placeholder}@", url)
    return _QUERY_PARAM.sub(
        lambda m: (
            f"{m.group('lead')}{placeholder}"
            if is_secret_param(m.group("name")) and m.group("value")
            else m.group(0)
        ),
        text,
    )


def redact_secrets(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """A copy of ``value`` (nested dicts / lists / tuples of JSON values) with secrets replaced.

    Redacted: the value of every mapping key :func:`is_secret_key` flags; strings that *are* a
    credential (``Bearer ...``, ``sk-...``, ``hf_...``) are replaced whole; every other string goes
    through :func:`redact_text` (URL user info, secret query values, Authorization values, the
    given ``secrets``); in lists of command-line arguments, the argument after a secret flag
    (``--api-key XYZ``) and the value of ``--api-key=XYZ``.
    """
    given = tuple(s for s in secrets if s)
    return _redact(value, given)


def _redact(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, Mapping):
        return {k: (REDACTED if is_secret_key(str(k)) else _redact(v, secrets)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        out: list[Any] = []
        redact_next = False
        for item in value:
            if redact_next:
                out.append(REDACTED)
                redact_next = False
                continue
            if isinstance(item, str) and (m := _SECRET_FLAG.match(item)) and is_secret_key(m.group(1)):
                if m.group(2) is None:
                    redact_next = True
                    out.append(item)
                else:
                    out.append(f"{item.split('=', 1)[0]}={REDACTED}")
                continue
            out.append(_redact(item, secrets))
        return out
    if isinstance(value, str):
        if _SECRET_VALUE.match(value) or _TOKEN_IN_TEXT.fullmatch(value.strip()):
            return REDACTED  # the whole string is a credential
        return redact_text(value, secrets)
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that runs :func:`redact_text` over each record's message (arguments
    merged first), with the ``secrets`` it was given (a callable is asked at every record)."""

    def __init__(self, secrets: Iterable[str] | None = None) -> None:
        super().__init__()
        self.secrets = tuple(secrets or ())

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave the record to logging's own handling
            return True
        redacted = redact_text(message, self.secrets)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


__all__ = [
    "MIN_SECRET_LEN",
    "REDACTED",
    "RedactingFilter",
    "is_secret_key",
    "is_secret_param",
    "redact_secrets",
    "redact_text",
    "redact_url",
    "secret_variants",
    "url_secrets",
]
