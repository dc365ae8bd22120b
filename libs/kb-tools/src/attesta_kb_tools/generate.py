"""Deterministic, streaming scale-out of the KB for benchmarks.

    from attesta_kb_tools.generate import scale
    for card in scale(50_000, seed=0):
        ...

Cards are derived from the shipped medicine, condition and procedure cards. Each
*generation* v (one pass over the base cards) is a consistently renamed copy of the
KB: every medicine brand name, generic name and eponym gets a fresh invented name
(the same new name everywhere within that generation), and doses, durations and
percentages are perturbed. Cards that mention a tracked brand or its products are not
used as bases, so scale-out data never states facts about the classifier's brands.

Output is a pure function of (n, seed); scale(k, s) is a prefix of scale(n, s) for k < n.
Card ids are `<base card_id>--s<seed>-v<generation>`; metadata gains `derived_from`,
`scale_seed` and `variant`. 50,000 cards take about a second on one core.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import NamedTuple

from attesta_kb.dataset import Record, load_brands, load_cards

from . import _vocab as V

SCALE_KINDS = ("medicine", "condition", "procedure")

_TOKEN = re.compile(
    r"(?P<num>\d+(?:\.\d+)?)(?P<unit>\s?(?:mg/kg|mg|mL|micrograms|minutes|%))(?![\w/])"
    r"|(?P<word>[A-Za-z][A-Za-z-]*[A-Za-z]|[A-Za-z])"
)

# Invented surname syllables for renamed eponyms.
_EP_PRE = ["Ash", "Bel", "Car", "Dal", "Em", "Fen", "Gar", "Hes", "Ing", "Jes", "Lath", "March",
           "Neth", "Oak", "Pen", "Quar", "Rud", "Stan", "Thorn", "Ulm", "Vex", "Weth", "Yar", "Zel",
           "Brack", "Cors", "Dun", "Elm", "Frith", "Gorm", "Holt", "Kern"]
_EP_MID = ["", "e", "in", "ow", "er", "an", "il", "or", "am", "et", "ad", "ul"]
_EP_POST = ["ley", "ford", "wick", "by", "ton", "more", "field", "worth", "stone", "dale", "hurst",
            "combe", "well", "mere", "gate", "holm", "croft", "shaw", "thorpe", "wood", "ridge",
            "brook", "ham", "stead"]
_EP_SPACE = len(_EP_PRE) * len(_EP_MID) * len(_EP_POST)
_BR_SPACE = len(V.BRAND_START) * len(V.BRAND_MID) * len(V.BRAND_MID) * len(V.BRAND_END)
_GN_SPACE = len(V.GENERIC_START) * len(V.GENERIC_MID) * len(V.GENERIC_MID) * len(V.GENERIC_MID)


def _radix(idx: int, *bases: list[str]) -> list[str]:
    out = []
    for b in bases:
        idx, r = divmod(idx, len(b))
        out.append(b[r])
    return out


def _permute(idx: int, space: int, salt: int) -> int:
    # Affine permutation of [0, space): unique outputs for unique inputs below `space`.
    a = 7919  # prime; coprime with every space used here
    while space % a == 0:  # pragma: no cover - defensive
        a += 2
    return (idx * a + salt) % space


def _brand_name(idx: int, salt: int) -> str:
    k = _permute(idx % _BR_SPACE, _BR_SPACE, salt)
    s, m1, m2, e = _radix(k, V.BRAND_START, V.BRAND_MID, V.BRAND_MID, V.BRAND_END)
    name = s + m1 + m2 + e
    if idx >= _BR_SPACE:
        name += V.BRAND_END[(idx // _BR_SPACE) % len(V.BRAND_END)]
    return name


def _generic_stem(idx: int, salt: int) -> str:
    k = _permute(idx % _GN_SPACE, _GN_SPACE, salt)
    s, m1, m2, m3 = _radix(k, V.GENERIC_START, V.GENERIC_MID, V.GENERIC_MID, V.GENERIC_MID)
    return s + m1 + m2 + m3


def _eponym(idx: int, salt: int) -> str:
    k = _permute(idx % _EP_SPACE, _EP_SPACE, salt)
    p, m, q = _radix(k, _EP_PRE, _EP_MID, _EP_POST)
    name = p + m + q
    if idx >= _EP_SPACE:
        name = f"{V.SURNAMES[(idx // _EP_SPACE) % len(V.SURNAMES)]}-{name}"
    return name


def _glue(stem: str, suffix: str) -> str:
    vowels = "aeiou"
    while stem and suffix and stem[-1] in vowels and suffix[0] in vowels:
        stem = stem[:-1]
    w = re.sub(r"([aeiou])\1+", r"\1", stem + suffix)
    return re.sub(r"([aeiou]{2})[aeiou]+", r"\1", w)


_CLASS_SUFFIXES = sorted({k[2] for s in V.SYSTEMS for k in s["classes"]}, key=len, reverse=True)


def _suffix_of(generic: str) -> str:
    for suf in _CLASS_SUFFIXES:
        if generic.endswith(suf) and len(generic) > len(suf) + 2:
            return suf
    return generic[-5:]


class _Name(NamedTuple):
    """A name in a template: renamed per generation (category brand|generic|Generic|eponym)."""

    category: str
    serial: int  # its place among the names of its category


class _Number(NamedTuple):
    """A quantity in a template: perturbed per card."""

    value: float
    unit: str


# A card text as literal text and the names and numbers to fill in between.
_Template = tuple[str | _Name | _Number, ...]
# A base card and the templates of its title, text and subject.
_Base = tuple[Record, _Template, _Template, _Template]


@lru_cache(maxsize=1)
def _prepared() -> tuple[list[_Base], dict[str, tuple[str, int]], dict[int, str]]:
    """Parse base cards once into templates. Returns (templates, names, generic_suffix):
    names maps a surface form to (category, index), category in brand|generic|Generic|eponym."""
    cards = load_cards()
    names: dict[str, tuple[str, int]] = {}
    counters = {"brand": 0, "generic": 0, "eponym": 0}
    generic_suffix: dict[int, str] = {}

    def add(form: str, cat: str) -> None:
        if form in names or len(form) < 3:
            return
        i = counters[cat]
        counters[cat] += 1
        names[form] = (cat, i)
        if cat == "generic":
            names[form[:1].upper() + form[1:]] = ("Generic", i)
            generic_suffix[i] = _suffix_of(form)

    for c in cards:
        md = c["metadata"]
        kind = md.get("kind")
        subj = str(md.get("subject", ""))
        if kind == "medicine":
            add(subj.split(" ")[0], "brand")
            if md.get("generic_name"):
                add(str(md["generic_name"]), "generic")
        elif kind in ("condition", "procedure"):
            first = subj.split(" ")[0]
            if first[:1].isupper():
                add(first, "eponym")
    for s in V.SURNAMES + V.ANCHOR_SURNAMES:
        add(s, "eponym")

    # Never emit facts about tracked brands: skip bases mentioning them or their products.
    forbidden: set[str] = set()
    for b in load_brands():
        forbidden.add(b["name"])
        forbidden.update(a for a in b["aliases"] if len(a) > 4)
        for p in b["products"]:
            forbidden.add(p["name"])
    forbidden_re = re.compile("|".join(re.escape(f) for f in sorted(forbidden, key=len, reverse=True)))

    templates: list[_Base] = []
    for c in cards:
        md = c["metadata"]
        if md.get("kind") not in SCALE_KINDS or md.get("brand_id"):
            continue
        if forbidden_re.search(c["text"]) or forbidden_re.search(c["title"]):
            continue
        templates.append((c, _compile(c["title"], names), _compile(c["text"], names),
                          _compile(str(md.get("subject", "")), names)))
    return templates, names, generic_suffix


def _compile(text: str, names: dict[str, tuple[str, int]]) -> _Template:
    pieces: list[str | _Name | _Number] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        if m.group("word") is not None:
            w = m.group("word")
            hit = names.get(w)
            if hit is None:
                continue
            pieces.append(text[pos:m.start()])
            pieces.append(_Name(*hit))
        else:
            pieces.append(text[pos:m.start()])
            pieces.append(_Number(float(m.group("num")), m.group("unit")))
        pos = m.end()
    pieces.append(text[pos:])
    return tuple(pieces)


def _nice(x: float) -> str:
    if x >= 10:
        return str(int(round(x)))
    r = round(x, 1)
    return str(int(r)) if r.is_integer() else f"{r:g}"


class _Renamer:
    def __init__(self, seed: int, generation: int, n_per_cat: dict[str, int], suffix: dict[int, str]) -> None:
        self.seed, self.v = seed, generation
        self.n = n_per_cat
        self.suffix = suffix
        self.cache: dict[tuple[str, int], str] = {}
        self.salt = (seed * 104729 + 12345) & 0x7FFFFFFF

    def __call__(self, cat: str, i: int) -> str:
        key = (cat, i)
        got = self.cache.get(key)
        if got is not None:
            return got
        if cat == "brand":
            out = _brand_name(self.v * self.n["brand"] + i, self.salt)
        elif cat in ("generic", "Generic"):
            out = _glue(_generic_stem(self.v * self.n["generic"] + i, self.salt), self.suffix.get(i, "ine"))
            if cat == "Generic":
                out = out[:1].upper() + out[1:]
        else:
            out = _eponym(self.v * self.n["eponym"] + i, self.salt)
        self.cache[key] = out
        return out


def _render(pieces: _Template, ren: _Renamer, factor: float, pct_shift: int,
            time_factor: float) -> str:
    out = []
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, _Name):
            out.append(ren(p.category, p.serial))
        else:
            val, unit = p
            u = unit.strip()
            if u == "%" and val < 10:
                out.append(f"{max(0.1, round(val * (1 + pct_shift / 20.0), 1)):g}{unit}")
            elif u == "%":
                out.append(f"{min(99, max(1, int(round(val)) + pct_shift))}{unit}")
            elif u == "minutes":
                out.append(f"{max(5, int(round(val * time_factor / 5.0)) * 5)}{unit}")
            else:
                out.append(_nice(val * factor) + unit)
    return "".join(out)


def _slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")


def scale(n: int, seed: int = 0) -> Iterator[Record]:
    """Yield `n` synthetic cards (same shape as `load_cards()` items), deterministically.

    Streaming: memory stays constant however large `n` is."""
    if n < 0:
        raise ValueError("n must be >= 0")
    templates, names, suffix = _prepared()
    counts = {"brand": 0, "generic": 0, "eponym": 0}
    for cat, i in names.values():
        if cat in counts:
            counts[cat] = max(counts[cat], i + 1)
    order = list(range(len(templates)))
    random.Random(seed).shuffle(order)
    rng = random.Random(f"attesta-scale-{seed}")
    factors = (0.5, 0.75, 1.25, 1.5, 2.0)
    ren = None
    L = len(order)
    for i in range(n):
        v, j = divmod(i, L)
        if j == 0 or ren is None:
            ren = _Renamer(seed, v, counts, suffix)
        base, title_t, text_t, subj_t = templates[order[j]]
        factor = factors[rng.randrange(5)]
        pct = rng.randrange(-8, 9)
        tf = factors[rng.randrange(5)]
        subject = _render(subj_t, ren, factor, pct, tf)
        md = dict(base["metadata"])
        md["subject"] = subject
        if md.get("generic_name") in names:
            md["generic_name"] = ren("generic", names[md["generic_name"]][1])
        md["derived_from"] = base["card_id"]
        md["scale_seed"] = seed
        md["variant"] = v
        src = base["source"]
        cut = src.rfind("/")
        yield {
            "card_id": f"{base['card_id']}--s{seed}-v{v}",
            "title": _render(title_t, ren, factor, pct, tf),
            "text": _render(text_t, ren, factor, pct, tf),
            "source": f"{src[:cut]}/{_slug(subject)}-v{v}",
            "metadata": md,
        }


def scale_base_size() -> int:
    """How many shipped cards serve as bases (one generation)."""
    return len(_prepared()[0])
