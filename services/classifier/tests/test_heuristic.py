"""The deterministic heuristic: one parametrised case per rule, lookalike and URL form."""

from __future__ import annotations

import dataclasses

import pytest

from attesta_classifier.domain.heuristic import (
    HEURISTIC_VERSION,
    brand_domains,
    cited_urls,
    decide,
    fold,
    host_is_on_domains,
    registered_domain,
)
from attesta_classifier.domain.model import Brand, Run
from attesta_contracts.classification import CitationClass

pytestmark = pytest.mark.unit

LUMORA = Brand(
    brand_id="lumora",
    workspace_id="ws",
    name="Lumora Therapeutics",
    aliases=("Lumora", "Lumora Tx", "Lumora Therapeutics S.A."),
    domains=("lumora.example",),
)
# A brand on a real multi-label public suffix, so the PSL really matters.
SHOP = Brand(brand_id="shop", workspace_id="ws", name="Brandly", domains=("brandly.co.uk",))
# An accented, IDN brand.
CAFE = Brand(brand_id="cafe", workspace_id="ws", name="Café Ñandú", aliases=("Nandu",), domains=("cafénandú.example",))

NEUTRAL_PROMPT = "Which companies make migraine medicines?"
BRAND_PROMPT = "What do you know about Lumora Therapeutics?"


def run(answer: str, prompt: str = NEUTRAL_PROMPT) -> Run:
    return Run(run_id="r1", workspace_id="ws", engine="test", model="m", prompt=prompt,
               answer=answer, answer_sha256="0" * 64)


def cls(answer: str, brand: Brand = LUMORA, prompt: str = NEUTRAL_PROMPT) -> CitationClass | None:
    d = decide(run(answer, prompt), brand)
    return d.citation_class if d else None


# --------------------------------------------------------------------------- STRONG

@pytest.mark.parametrize("answer", [
    "Lumora's site is https://lumora.example/about.",
    "See http://lumora.example",
    "See lumora.example for details.",
    "See lumora.example/products/velnorex, which lists the dose.",
    "Visit www.lumora.example.",
    "More at <https://lumora.example/pipeline>.",
    "[Lumora](https://lumora.example/leadership) lists the team.",
    "[the official site](<https://lumora.example/about> \"About\")",
    "Source: (https://lumora.example/about).",
    "Sources: https://lumora.example/about; https://other.example/x",
    "HTTPS://LUMORA.EXAMPLE/ABOUT",
    "https://Lumora.Example./about",  # trailing root dot
    "https://lumora.example:8443/about",
    "https://user:pw@lumora.example/about",  # userinfo that ends on the brand's host
    "https://evil.io@lumora.example/",  # the host really is lumora.example
    "https://shop.eu.lumora.example/x",
    "**https://lumora.example/about**",
    "“https://lumora.example/about”",
    "ｈｔｔｐｓ://ｌｕｍｏｒａ．ｅｘａｍｐｌｅ/about",  # full-width forms (browsers normalize them)
    "lumora。example",  # ideographic full stop
    "//lumora.example/about",  # protocol-relative
    "it is on https://lumora.example/?ref=chat#top!",
    '<a href="https://lumora.example/about">Lumora</a>',
    "<a class='x' href=https://lumora.example/about>the site</a>",
])
def test_strong_url_forms(answer: str) -> None:
    d = decide(run(answer), LUMORA)
    assert d is not None and d.citation_class is CitationClass.STRONG, answer
    assert d.decided_by == "deterministic" and d.heuristic_version == HEURISTIC_VERSION
    assert "lumora.example" in d.reason


@pytest.mark.parametrize("answer", [
    "Lumora Therapeutics: https://lumora.example.evil.io/about",  # brand domain as a subdomain of another
    "Lumora Therapeutics: https://lumora.example@evil.io/about",  # userinfo trick
    "Lumora Therapeutics: https://lumora.example:443@evil.io/",
    "Lumora Therapeutics: https://evil.io\\@lumora.example/",  # browsers read \ as /: host evil.io
    "Lumora Therapeutics: https://evil.io/lumora.example",
    "Lumora Therapeutics: https://evil.io/?next=https://lumora.example/",
    "Lumora Therapeutics: notlumora.example",
    "Lumora Therapeutics: https://mylumora.example/",
    "Lumora Therapeutics: lumora-example.net",
    "Lumora Therapeutics: lumora.example.com",
    "Lumora Therapeutics: https://lumora.examples/",
    "Lumora Therapeutics: https://lumοra.example/ (Greek omicron)",
    "Lumora Therapeutics: [lumora.example](https://evil.io/)",  # disguised markdown link
    'Lumora Therapeutics: <a href="https://evil.io/">lumora.example</a>',  # disguised HTML link
    "Lumora Therapeutics: <A HREF='https://evil.io/'>https://lumora.example</A>",
    "Lumora Therapeutics: write to info@lumora.example",  # an e-mail address is not a URL
    "Lumora Therapeutics: mailto:info@lumora.example",
    "Lumora Therapeutics: javascript://lumora.example/%0Aalert(1)",
    "Lumora Therapeutics: ftp://lumora.example/pub",
])
def test_lookalikes_and_non_urls_are_not_strong(answer: str) -> None:
    assert cls(answer) is not CitationClass.STRONG, answer


@pytest.mark.parametrize(("host", "expected"), [
    ("brandly.co.uk", "brandly.co.uk"),
    ("www.brandly.co.uk", "brandly.co.uk"),
    ("co.uk", None),
    ("brandly.co.uk.evil.io", None),
    ("evilbrandly.co.uk", None),
])
def test_registered_domain_uses_public_suffix_rules(host: str, expected: str | None) -> None:
    assert host_is_on_domains(host, brand_domains(SHOP)) == expected


def test_psl_default_rule_makes_example_tld_registrable() -> None:
    assert registered_domain("www.lumora.example") == "lumora.example"
    assert registered_domain("a.b.co.uk") == "b.co.uk"
    assert registered_domain("co.uk") is None


def test_public_suffix_as_brand_domain_is_ignored() -> None:
    misconfigured = dataclasses.replace(SHOP, domains=("co.uk",))
    assert brand_domains(misconfigured) == ()
    assert cls("Brandly: https://anything.co.uk/", misconfigured) is not CitationClass.STRONG


@pytest.mark.parametrize("answer", [
    "Café Ñandú: https://cafénandú.example/menu",
    "Café Ñandú: https://xn--cafnand-dya1n.example/menu",  # the same host in punycode
    "Café Ñandú: HTTPS://CAFÉNANDÚ.EXAMPLE",
])
def test_idna_hosts_compare_in_punycode(answer: str) -> None:
    assert cls(answer, CAFE) is CitationClass.STRONG


def test_real_psl_brand_strong() -> None:
    assert cls("Buy at https://shop.brandly.co.uk/x", SHOP) is CitationClass.STRONG
    assert cls("Brandly at https://brandly.co.uk.evil.io/x", SHOP) is not CitationClass.STRONG


def test_cited_urls_ignore_prose_abbreviations() -> None:
    assert cited_urls("e.g. S.A. U.S. 3.5 mg, i.e. Inc., approx.") == ()


# --------------------------------------------------------------------------- ABSENT

@pytest.mark.parametrize("answer", [
    "Orbisan Pharma and Kestrel Biosciences both make migraine medicines.",
    "Lumoravision makes cameras.",  # the name inside a longer word
    "Lumoro Labs is a lab-services company.",  # a lookalike company
    "The Lumoras were a band.",
    "Try notlumora.example.",
    "Lumora_Bot is a chatbot.",
    "",
])
def test_absent(answer: str) -> None:
    d = decide(run(answer), LUMORA)
    assert d is not None and d.citation_class is CitationClass.ABSENT, answer
    assert "Lumora Therapeutics" in d.reason


@pytest.mark.parametrize("answer", [
    "LUMORA makes tablets.",
    "lumora makes tablets.",
    "Lumorá makes tablets.",  # accent-insensitive
    "Ｌｕｍｏｒａ makes tablets.",  # full-width
    "Lumora's tablets are popular.",
    "Lumora-made tablets are popular.",
    "Lumora\u00a0Tx makes tablets.",  # alias across a no-break space
    "Lumora\nTherapeutics makes tablets.",
    "Write to info@lumora.example.",  # the domain is a mention
])
def test_mentions_are_not_absent(answer: str) -> None:
    assert cls(answer) is not CitationClass.ABSENT, answer


def test_accented_brand_name_matches_unaccented_text() -> None:
    assert cls("CAFE NANDU sells coffee.", CAFE) is not CitationClass.ABSENT
    assert cls("Nandu sells coffee.", CAFE) is not CitationClass.ABSENT
    assert cls("Nanduzal sells coffee.", CAFE) is CitationClass.ABSENT


def test_fold() -> None:
    assert fold("Ｌｕｍｏｒá Ǆ") == "lumora dz"


# --------------------------------------------------------------------------- ECHO

@pytest.mark.parametrize("answer", [
    "I don't have specific information about Lumora Therapeutics. Please check their official website.",
    "I'm not familiar with Lumora Therapeutics.",
    "Lumora Therapeutics? Sorry, I cannot provide reliable details about it.",
    "You asked about Lumora. I have no verified information about this company; consult recent news.",
    "lumora therapeutics",
])
def test_sure_echo(answer: str) -> None:
    d = decide(run(answer, BRAND_PROMPT), LUMORA)
    assert d is not None and d.citation_class is CitationClass.ECHO, answer
    assert d.decided_by == "deterministic"


@pytest.mark.parametrize(("prompt", "answer"), [
    # the prompt did not carry the brand: an unprompted mention goes to the judge
    (NEUTRAL_PROMPT, "I don't have specific information about Lumora Therapeutics."),
    # content words beyond the prompt's
    (BRAND_PROMPT, "Lumora Therapeutics makes migraine medicines."),
    # a number is always specific
    ("Was Lumora founded in 1999?", "Lumora was founded in 1999."),
    # a yes/no verdict on the prompt's own assertion is a claim
    ("Is Lumora a dental company?", "Yes, Lumora is a dental company."),
    ("Is Lumora a dental company?", "Lumora is not a dental company."),
    ("Is Lumora a dental company?", "Lumora isn't a dental company."),
    # pronoun sentences count as being about the brand
    (BRAND_PROMPT, "I know Lumora Therapeutics. It sells nasal sprays."),
    (BRAND_PROMPT, "Lumora Therapeutics. The company is headquartered in Lisbon."),
    # any URL at all is a claim
    (BRAND_PROMPT, "Lumora Therapeutics: see lumora-tx.example"),
    (BRAND_PROMPT, "Lumora Therapeutics is led by Marta Kessling-Soares."),
])
def test_not_sure_goes_to_judge(prompt: str, answer: str) -> None:
    assert decide(run(answer, prompt), LUMORA) is None


def test_prompt_words_are_not_content() -> None:
    prompt = "Tell me about Lumora Therapeutics and its migraine products."
    d = decide(run("Lumora Therapeutics has migraine products.", prompt), LUMORA)
    assert d is not None and d.citation_class is CitationClass.ECHO


# --------------------------------------------------------------------------- order and determinism

def test_strong_wins_over_everything() -> None:
    d = decide(run("I know nothing about it: https://lumora.example", BRAND_PROMPT), LUMORA)
    assert d is not None and d.citation_class is CitationClass.STRONG


def test_deterministic() -> None:
    answers = ["See lumora.example", "Nothing here.", "I'm not familiar with Lumora.", "Lumora sells pills."]
    first = [decide(run(a, BRAND_PROMPT), LUMORA) for a in answers]
    again = [decide(run(a, BRAND_PROMPT), LUMORA) for a in answers]
    assert first == again
    assert [d and d.citation_class for d in first] == [
        CitationClass.STRONG, CitationClass.ABSENT, CitationClass.ECHO, None]
