"""The labelled set of runs for the classifier (``labeled_runs.jsonl``), its builder and its
ground truth.

Runs are written from the six invented brands of ``attesta_kb.load_brands()`` by templates that
cover every rule and edge case of ADR-031: STRONG URL forms, lookalike domains, ABSENT with
substring and lookalike-company traps, accents, sure and unsure ECHO, DESCRIPTIVE paraphrases,
and CONFABULATED answers with wrong numbers, years, CEO names, cities, doses, other brands'
products and negations. Each row carries its label (what a careful human auditor would say
against the brand's ground truth) and a ``category`` naming the edge case.

Split: by brand, so the test split is brands the rules were never tuned on:
dev = lumora, halvane, thessaly; test = kestrel, orbisan, corvina.

Ground truth (``brand_facts``) is derived the way a refresh derives it: every page of the
brand's site (``attesta_kb.sites.render_page``, the same HTML the local site server serves) goes
through the classifier's fact extraction (``domain.extraction.extract_facts``) and fact ids.

    python -m attesta_classifier.data.labeled          # rewrite labeled_runs.jsonl
    python -m attesta_classifier.data.labeled --check  # exit 1 if the committed file is stale
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from ..domain.model import Brand, Fact, Run

FILE_NAME = "labeled_runs.jsonl"
WORKSPACE = "ws-labelled"
DEV_BRANDS = ("lumora", "halvane", "thessaly")
TEST_BRANDS = ("kestrel", "orbisan", "corvina")
FETCHED_AT = datetime(2026, 12, 1, tzinfo=UTC)

# Invented people and places for wrong answers (none of them appears in any brand's facts).
WRONG_CEOS = ("Jonathan Whitaker", "Elena Marchetti", "Rajiv Anand", "Sophie Delacroix",
              "Henrik Solberg", "Laura Pfeiffer")
WRONG_CITIES = ("Dublin", "Munich", "Toronto", "Singapore", "Oslo", "Madrid")
ACCENTED = str.maketrans({"a": "á", "e": "é", "o": "ö", "u": "ü", "i": "í"})


def _h(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _pick(seq: tuple[str, ...] | list[str], *key: object) -> str:
    return seq[_h(*key) % len(seq)]


def _first_number(text: str) -> int:
    m = re.search(r"\d+", text)
    return int(m.group(0)) if m else 1


def _accent(name: str) -> str:
    """Accent the first vowel after the first letter: Lumora -> Lumóra (still the same name)."""
    for i, ch in enumerate(name[1:], 1):
        if ch in "aeiou":
            return name[:i] + ch.translate(ACCENTED) + name[i + 1:]
    return name


def _brand_rows(b: dict, others: list[dict], lookalike: dict | None, n: int) -> list[dict]:
    name, alias, domain = b["name"], b["aliases"][0], b["domains"][0]
    first = name.split()[0]
    city = b["headquarters"].split(",")[0]
    p0, p1 = b["products"][0], b["products"][1]
    other, other2 = others[n % len(others)], others[(n + 1) % len(others)]
    other_product = other["products"][0]
    desc_rest = b["description"][len(name):].strip() if b["description"].startswith(name) else b["description"]
    wrong_ceo = WRONG_CEOS[n % len(WRONG_CEOS)]
    wrong_city = WRONG_CITIES[n % len(WRONG_CITIES)]
    cond = p0.get("condition") or p0["indication"]
    dose_n = _first_number(p0["dose"])
    neutral = f"Which companies are active in {b['industry']} products for {cond}?"
    about = f"What do you know about {name}?"
    about_alias = f"Tell me about {alias}."
    rows: list[tuple[str, str, str, str, str]] = [
        # ---- STRONG: a URL on the brand's domain, in every form engines write it
        ("strong_https_url", neutral,
         f"{name} is one of them; its product pages are at https://{domain}/products/{p0['id']}.", "STRONG"),
        ("strong_bare_domain", about,
         f"{name} describes itself on {domain}, where it lists {p0['name']} and {p1['name']}.", "STRONG"),
        ("strong_markdown_link", about_alias,
         f"According to [{alias}'s leadership page](https://www.{domain}/leadership), the company is led by {b['ceo']}.",
         "STRONG"),
        ("strong_angle_port_case", about,
         f"The official site is <HTTPS://{domain.upper()}:443/about>.", "STRONG"),
        ("strong_subdomain_trailing_punct", neutral,
         f"See investors.{domain}/newsroom/fy2025-results, which covers {name}'s fiscal 2025.", "STRONG"),
        ("strong_wrong_content_still_strong", about,
         f"{name} was founded in 1851 (source: https://{domain}/about).", "STRONG"),
        # ---- lookalike URLs: never STRONG; the text decides
        ("lookalike_subdomain_of_other", about,
         f"{name} {desc_rest} More: https://{domain}.evil-mirror.io/about", "DESCRIPTIVE"),
        ("lookalike_userinfo", neutral,
         f"{name} is headquartered in {city} (https://{domain}@trk-links.io/about).", "DESCRIPTIVE"),
        ("lookalike_domains_only", about,
         f"{name}: see https://not{domain}/ or https://{domain.replace('.', '-')}.net/ for more.", "ECHO"),
        ("lookalike_disguised_markdown", about_alias,
         f"[{domain}](https://evil-mirror.io/{b['id']}) says {alias} was founded in {b['founded']}.", "DESCRIPTIVE"),
        # ---- ABSENT: no mention at all, including traps
        ("absent_competitors_only", neutral,
         f"The best known are {other['name']} and {other2['name']}, both with products for {cond}.", "ABSENT"),
        ("absent_substring_trap", neutral,
         f"{first}vision Imaging makes camera systems, and {other['name']} makes medicines.", "ABSENT"),
        ("absent_prompt_named_but_answer_not", about,
         f"I can tell you about {other['name']}: it is one of the companies in this field.", "ABSENT"),
        # ---- ECHO
        ("echo_hedge_sure", about,
         f"I don't have specific information about {name}. Please check their official website "
         "or recent news for up-to-date details.", "ECHO"),
        ("echo_not_familiar_prompt_words", f"Is {alias} a good company to work for?",
         f"I'm not familiar with {alias}, so I cannot say whether it is a good company to work for.", "ECHO"),
        ("echo_list_mention", neutral,
         f"Names that come up include {name}, {other['name']} and {other2['name']}; compare them yourself.", "ECHO"),
        ("echo_vague_praise", neutral,
         f"{name} is a well-known name in the industry with a strong reputation.", "ECHO"),
        ("echo_repeat_prompt", f"Is {name} a real company?",
         f"{name} appears to be a company name, but I can't confirm any details about it.", "ECHO"),
        # ---- DESCRIPTIVE: correct, without a link
        ("descriptive_industry_city", neutral,
         f"{name} is a {b['industry']} company headquartered in {city}.", "DESCRIPTIVE"),
        ("descriptive_description", about,
         f"{alias} {desc_rest}", "DESCRIPTIVE"),
        ("descriptive_product_dose", neutral,
         f"{alias} makes {p0['name']}, a {p0['form']}; the usual dose is {p0['dose']}.", "DESCRIPTIVE"),
        ("descriptive_founded_ceo", about,
         f"Founded in {b['founded']}, {name} is led by chief executive {b['ceo']}.", "DESCRIPTIVE"),
        ("descriptive_employees", about_alias,
         f"{name} employs about {b['employees']:,} people.", "DESCRIPTIVE"),
        ("descriptive_product_year", neutral,
         f"{name}'s {p1['name']} was first approved in {p1['approved']}.", "DESCRIPTIVE"),
        ("descriptive_accented_name", neutral,
         f"{_accent(name)} is a {b['industry']} company based in {city}.", "DESCRIPTIVE"),
        # ---- CONFABULATED: a specific statement that contradicts or is absent from the facts
        ("confab_founded_year", about,
         f"{name} was founded in {b['founded'] + 7}.", "CONFABULATED"),
        ("confab_ceo_name", about_alias,
         f"{alias}'s chief executive is {wrong_ceo}.", "CONFABULATED"),
        ("confab_employees", about,
         f"{name} employs about {b['employees'] * 3 + 40:,} people.", "CONFABULATED"),
        ("confab_city", neutral,
         f"{name} is a {b['industry']} company headquartered in {wrong_city}.", "CONFABULATED"),
        ("confab_dose", neutral,
         f"{alias} makes {p0['name']}; the usual dose is {dose_n * 2 + 5} units.", "CONFABULATED"),
        ("confab_other_brands_product", neutral,
         f"{name} is best known for {other_product['name']}, its flagship product.", "CONFABULATED"),
        ("confab_approval_year", about,
         f"{name}'s {p1['name']} was first approved in {p1['approved'] - 4}.", "CONFABULATED"),
        ("confab_negation", about,
         f"Contrary to what some think, {name} is not a {b['industry']} company.", "CONFABULATED"),
        ("confab_unrelated_business", neutral,
         f"{name} is mainly known for dental implants and orthodontic aligners.", "CONFABULATED"),
        ("confab_true_then_false", about,
         f"{name} is headquartered in {city}, and its chief executive is {wrong_ceo}.", "CONFABULATED"),
    ]
    if lookalike is not None:
        # A lookalike company: for most brands the name is a different word (ABSENT); for
        # Kestrel ("Kestrel Ridge Analytics") the alias is a real word inside another name.
        rows.append(("absent_lookalike_company", neutral,
                     f"{lookalike['name']} is a small firm that also shows up in searches.", "ABSENT"))
    out = []
    for i, (category, prompt, answer, label) in enumerate(rows):
        run_id = f"lab-{b['id']}-{i:02d}-{category}"
        out.append({
            "run_id": run_id, "brand_id": b["id"], "split": "dev" if b["id"] in DEV_BRANDS else "test",
            "category": category, "label": label, "prompt": prompt, "answer": answer,
        })
    return out


def build_rows() -> list[dict]:
    from attesta_kb import load_brands, load_lookalikes

    brands = load_brands()
    lookalikes = {lk["not"]: lk for lk in load_lookalikes()}
    rows: list[dict] = []
    for n, b in enumerate(brands):
        others = [o for o in brands if o["id"] != b["id"]]
        rows.extend(_brand_rows(b, others, lookalikes.get(b["id"]), n))
    return rows


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def load_labeled_runs(split: str | None = None) -> list[dict]:
    text = resources.files("attesta_classifier.data").joinpath(FILE_NAME).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [r for r in rows if split is None or r["split"] == split]


def brand_of(b: dict, workspace_id: str = WORKSPACE) -> Brand:
    return Brand(brand_id=b["id"], workspace_id=workspace_id, name=b["name"],
                 aliases=tuple(b["aliases"]), domains=tuple(b["domains"]),
                 competitors=tuple(b["competitors"]), sources=tuple(b["sources"]))


def brand_facts(b: dict, workspace_id: str = WORKSPACE) -> list[Fact]:
    """What a ground-truth refresh extracts from the brand's (local) site, page by page."""
    from attesta_kb.sites import render_page

    from ..domain.extraction import extract_facts, fact_id

    facts: dict[str, Fact] = {}
    for url in b["sources"]:
        parts = urlsplit(url)
        page = render_page(parts.hostname or "", parts.path)
        if page.status != 200:
            continue
        content_sha = hashlib.sha256(page.body).hexdigest()
        for ef in extract_facts(page.body.decode("utf-8")):
            fid = fact_id(workspace_id, b["id"], ef.type, url, ef.text)
            facts.setdefault(fid, Fact(fid, b["id"], ef.type, ef.text, url, FETCHED_AT,
                                       parts.hostname or "", content_sha))
    return sorted(facts.values(), key=lambda f: f.fact_id)


def run_of(row: dict, workspace_id: str = WORKSPACE) -> Run:
    return Run(run_id=row["run_id"], workspace_id=workspace_id, engine="labelled", model="labelled",
               prompt=row["prompt"], answer=row["answer"],
               answer_sha256=hashlib.sha256(row["answer"].encode("utf-8")).hexdigest(),
               brand_ids=(row["brand_id"],))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    args = parser.parse_args(argv)
    path = Path(__file__).with_name(FILE_NAME)
    text = render(build_rows())
    if args.check:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            print(f"{path} is stale: run python -m attesta_classifier.data.labeled", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} rows to {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
