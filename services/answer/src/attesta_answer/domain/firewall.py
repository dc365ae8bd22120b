"""The LLM–URL firewall (ADR-0024 §4): no string the model emits becomes a displayed URL.

Decision: link-like text is **removed**, not defanged. Each link is replaced by the visible
marker ``(link removed)`` (no square brackets: a markdown renderer must not read it as a
link reference) (markdown and HTML links keep their text, lose their target), so
neither a client's auto-linker nor a markdown/HTML renderer can turn model text into a link,
and a reader sees that something was taken out. The only URLs a reply carries are the
``source_url`` fields, built by enrichment from the verified KB.

``strip_links`` runs on everything the generator emits (answer text and spans) and on the
card text and titles we put into a prompt (so the model is never shown a URL to repeat).

What counts as a link (checked per whitespace-separated token, on a *probe* copy of the
token that is NFKC-normalised, invisible characters removed, dot look-alikes ``。．｡․﹒`` and
defanged dots ``[.]`` ``(.)`` ``{.}`` ``[dot]`` ``(dot)`` turned into ``.``, backslashes into
``/`` and percent-escapes decoded; the original token is kept when it is not a link):

- any ``scheme://`` (``http``, ``hxxp``, ``ftp``, anything), protocol-relative ``//host``;
- a token starting with a scriptable or navigable scheme and a colon, even without slashes
  (``javascript:``, ``vbscript:``, ``data:``, ``file:``, ``blob:``, ``mailto:``, ``tel:``,
  ``http:``/``https:`` with zero or one slash, ...);
- ``www.`` anything; an e-mail address;
- a bare domain: dot-separated labels ending in a real top-level domain (the Public Suffix
  List's TLDs, from the installed ``publicsuffixlist`` data, plus the reserved ``example``,
  ``test``, ``invalid``, ``localhost``, ``local``, ``internal``, ``onion``...), with or without
  a port or path: ``example.com/path``, ``lumora.example``, ``xn--80ak6aa92e.com``;
- a dotted-quad IPv4 address;
- before tokens are looked at, whole-text forms: markdown links ``[text](url)`` and images
  ``![alt](url)`` (text kept), reference links ``[text][ref]`` (text kept) and reference
  definitions ``[ref]: url`` (line removed), autolinks ``<url>``, HTML tags (removed, so
  ``<a href=...>text</a>`` keeps its text) and HTML character references (decoded first, so
  ``&#104;ttps://`` is caught);
- a token longer than ``MAX_TOKEN_CHARS`` (200) that has any link character is removed without
  further checks (no prose word is that long, and it keeps the checks linear).

Known false positive, accepted: a sentence glued to the next without a space where the
next word is a TLD ("dose.It") is removed as a domain. Spelled-out forms across several
words ("example dot com") are not links to any client and are left alone.
"""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache
from importlib import resources
from urllib.parse import unquote

from attesta_answer.domain.text import strip_invisible

LINK_REMOVED = "(link removed)"

_RESERVED_TLDS = {"example", "test", "invalid", "localhost", "local", "internal", "onion",
                  "lan", "home", "corp", "intranet", "arpa", "alt"}
_SCHEME_AT_START = re.compile(
    r"^(?:javascript|vbscript|livescript|data|file|blob|filesystem|mailto|tel|sms|callto|"
    r"ftp|ftps|sftp|ssh|ws|wss|https?|hxxps?|intent|about|chrome|view-source|jar|ms-[a-z-]+|"
    r"git|irc|magnet|market|skype|zoommtg|slack|steam|tg|whatsapp):", re.I)
_ANY_SCHEME_SLASHES = re.compile(r"[a-z][a-z0-9+.\-]*:/{2}", re.I)
_PROTOCOL_RELATIVE = re.compile(r"(?:^|[^:/\w])//[\w\-]+\.[\w\-]")
_WWW = re.compile(r"(?:^|[^\w\-])www\d{0,3}\.", re.I)
_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+", re.I)
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]*\w)")
_DOMAIN = re.compile(r"(?<![\w\-])(?:[^\W_](?:[\w\-]{0,61}[^\W_])?\.)+([^\W\d_][\w\-]{1,62})(?![\w\-])")
_DEFANGED_DOT = re.compile(r"\[\.\]|\(\.\)|\{\.\}|\[dot\]|\(dot\)|\{dot\}", re.I)
_DOT_LOOKALIKES = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": ".", "\u2024": ".",
                                 "\ufe52": ".", "\\": "/", "\u2044": "/", "\u2215": "/",
                                 "\u29f8": "/", "\ua789": ":", "\u2236": ":", "\ufe55": ":"})

_MD_IMAGE_OR_LINK = re.compile(r"!?\[([^\[\]]*)\]\(\s*(?:[^()\s]|\([^()]*\))*(?:\s+[\"'][^\"']*[\"'])?\s*\)")
_MD_REF_LINK = re.compile(r"\[([^\[\]]+)\]\[[^\[\]]*\]")
_MD_REF_DEF = re.compile(r"^[ \t]*\[[^\[\]]+\]:[ \t]*\S+.*$", re.M)
_AUTOLINK = re.compile(r"<[^<>\s]*[:.@][^<>\s]*>")
_HTML_TAG = re.compile(r"</?[a-z][^<>]*>|<!--.*?-->", re.I | re.S)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Tokens worth a look: a colon, slash, at-sign, backslash, percent, bracket, non-ASCII or "www"
# anywhere, or a dot followed by more of the token. Plain words and sentence-final full stops
# are skipped by the regex engine itself (``_neutralise_token`` still checks every candidate).
_CANDIDATE_TOKEN = re.compile(r"(?<!\S)\S*?(?:[:/@\\%\[({]|[^\x00-\x7f]|www|\.(?=\S))\S*", re.I)
_MAX_PASSES = 5
MAX_TOKEN_CHARS = 200
_MAYBE_LINK = re.compile(r"[.:/@\\%\[({]|[^\x00-\x7f]")
_LEAD = "\"'([{<*_~`«‹“‘"
_TRAIL = "\"')]}>*_~`.,;:!?»›”’"


@lru_cache(maxsize=1)
def top_level_domains() -> frozenset[str]:
    """Every TLD in the installed Public Suffix List (unicode and punycode forms) + reserved."""
    data = resources.files("publicsuffixlist").joinpath("public_suffix_list.dat").read_text("utf-8")
    tlds = set(_RESERVED_TLDS)
    for line in data.splitlines():
        rule = line.strip().lstrip("!*.")
        if not rule or rule.startswith("//") or "." in rule:
            continue
        tlds.add(rule.casefold())
        try:
            tlds.add(rule.encode("idna").decode("ascii").casefold())
        except UnicodeError:
            pass
    return frozenset(tlds)


def _probe(token: str) -> str:
    probe = unicodedata.normalize("NFKC", strip_invisible(token)).translate(_DOT_LOOKALIKES)
    return _DEFANGED_DOT.sub(".", probe).casefold()


def _is_linklike(probe: str) -> bool:
    for candidate in {probe, unquote(probe)}:
        core = candidate.lstrip(_LEAD)
        if (_SCHEME_AT_START.match(core) or _ANY_SCHEME_SLASHES.search(candidate)
                or "://" in candidate):
            return True
        if (_PROTOCOL_RELATIVE.search(candidate) or _WWW.search(candidate)
                or _EMAIL.search(candidate) or _IPV4.search(candidate)):
            return True
        tlds = top_level_domains()
        if any(m.group(1) in tlds for m in _DOMAIN.finditer(candidate)):
            return True
    return False


def _neutralise_token(token: str) -> str:
    # Fast path: a link needs a dot, colon, slash, at-sign, backslash or percent inside it (or a
    # non-ASCII look-alike of one); most words have none once end punctuation is trimmed.
    core = token.strip((_LEAD + _TRAIL).replace(":", ""))
    if not _MAYBE_LINK.search(core) and "www" not in core.casefold():
        return token
    # No word of prose is this long: a long token with link characters is removed unexamined
    # (the pattern checks below are superlinear in the token's length).
    if len(core) <= MAX_TOKEN_CHARS and not _is_linklike(_probe(token)):
        return token
    # Keep surrounding punctuation that is not part of a link, so the sentence still reads.
    start = len(token) - len(token.lstrip(_LEAD))
    end = max(start, len(token.rstrip(_TRAIL)))
    core, trail = token[start:end], token[end:]
    for opener, closer in ("()", "[]", "{}"):  # closers that close the link's own brackets go too
        for _ in range(max(0, core.count(opener) - core.count(closer))):
            trail = trail.replace(closer, "", 1)
    return token[:start] + LINK_REMOVED + trail


def strip_links(text: str) -> str:
    """``text`` with every link-like thing removed (see the module docstring).

    Removing one construct can assemble another (``<<a>a>`` leaves ``<a>``), so the pass is
    repeated until nothing changes (at most ``_MAX_PASSES`` times)."""
    if not text:
        return ""
    for _ in range(_MAX_PASSES):
        cleaned = _strip_once(text)
        if cleaned == text:
            break
        text = cleaned
    return text


def _strip_once(text: str) -> str:
    text = _CONTROL.sub("", strip_invisible(html.unescape(text)))
    text = _MD_REF_DEF.sub("", text)
    text = _MD_IMAGE_OR_LINK.sub(lambda m: m.group(1), text)
    text = _MD_REF_LINK.sub(lambda m: m.group(1), text)
    text = _AUTOLINK.sub(LINK_REMOVED, text)
    text = _HTML_TAG.sub("", text)
    return _CANDIDATE_TOKEN.sub(lambda m: _neutralise_token(m.group(0)), text).strip()
