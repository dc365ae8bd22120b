"""Assistant quality on hand-written questions: retrieval per path, answers, calibration.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/answer_quality.py --label after
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/answer_quality.py --render   # docs only

Question sets (``benchmarks/data``): ``assistant_heldout.json`` (the HELD-OUT split: written
before any change, never tuned on, only reported here) and ``assistant_dev.json`` (where the
grounding threshold is chosen), each question with a style tag and the cards that answer it
(``relevant = {}``: the KB cannot answer it).

For every question, in process, with the service's own code: the retriever
(``HybridRetriever`` over the shipped KB) on each path (dense_only, BM25 alone, rrf_only,
full, and an oracle that sorts the fused top 20 by true grade), then the answer service's
``build_answer`` with the offline generator on the rrf_only and the full retrieval results.
Measured: answer rate (not ``no_context``) overall and per style, answers given to questions
the KB cannot answer, first-citation precision (the first citation's card is labelled
relevant), nDCG@10 per path, and the reranker's reliability table (sigmoid(logit) against
relevance). Per-question results go to ``benchmarks/results/answer_quality_<label>.json``;
``docs/answer-quality.md`` is rendered from the ``before`` and ``after`` files side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
RESULTS = ROOT / "benchmarks" / "results"
SPLITS = {"heldout": DATA / "assistant_heldout.json", "dev": DATA / "assistant_dev.json"}
PATHS = ("dense_only", "bm25", "rrf_only", "full", "oracle")


def load_split(name: str) -> list[dict]:
    return json.loads(SPLITS[name].read_text())["questions"]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else 0.0


async def run_question(retriever, generator, q: dict, top_k: int = 5,
                       answer_paths: tuple[str, ...] | None = None) -> dict:
    from attesta_contracts.chat import HybridPath, RetrievalCompleted
    from attesta_answer.domain.extractive import choose_lead
    from attesta_answer.domain.model import visible_cards
    from attesta_answer.service_layer.answering import build_answer

    rel = q["relevant"]
    lang = q.get("lang") or ("other" if q["style"] == "other_lang" else "en")
    row: dict = {"id": q["id"], "style": q["style"], "facets": q.get("facets", []), "lang": lang, "relevant": rel,
                 "ranked": {}, "answers": {}, "ms": {}}
    evidence, retriever.evidence = retriever.evidence, None  # only the answered paths need it
    dense = await retriever.retrieve(q["question"], 10, force_path=HybridPath.DENSE_ONLY)
    retriever.evidence = evidence
    row["ranked"]["dense_only"] = [c.card_id for c in dense.chunks]
    row["ranked"]["bm25"] = [cid for cid, _ in retriever.index.sparse.search(q["question"], 10)]
    outcomes = {"rrf_only": await retriever.retrieve(q["question"], 10, force_path=HybridPath.RRF_ONLY)}
    if retriever.reranker.model is not None:
        outcomes["full"] = await retriever.retrieve(q["question"], 10)
    for path, out in outcomes.items():
        row["ranked"][path] = [c.card_id for c in out.chunks]
        row["ms"][path] = out.timings_ms.get("total", 0.0)
        if answer_paths is not None and path not in answer_paths:
            continue  # a slow reader (the local LLM) answers on the path that ships only
        completed = RetrievalCompleted(request_id=q["id"], question=q["question"], top_k=top_k,
                                       chunks=out.chunks[:top_k], hybrid_path=out.hybrid_path,
                                       path_reason=out.path_reason, timings_ms=out.timings_ms,
                                       language=getattr(out, "language", None))
        built = await build_answer(completed, generator)
        reply = built.reply
        row.setdefault("detected_lang", {})[path] = getattr(out, "language", None)
        gate = getattr(generator, "gate", None)
        cards = visible_cards(out.chunks[:top_k], out.hybrid_path)
        lead = choose_lead(cards) if gate is not None and cards else None
        if lead is not None:  # the gate's probability: the trade-off curve reads it
            decision = gate.decide(q["question"], cards, lead, completed.language)
            row.setdefault("gate", {})[path] = {"p": decision.probability, "model": decision.model,
                                                 "threshold": decision.threshold}
        row["answers"][path] = {
            "status": str(reply.status), "answer": reply.answer,
            "cited": [c.card_id for c in reply.citations],
            "score": reply.citations[0].retrieved_score if reply.citations else None,
            "label": str(out.hybrid_path),
            "generate_ms": reply.timings_ms.get("answer.generate"),
            "dropped_citations": len(built.dropped),
            "error": reply.error,
        }
    head = [h.card_id for h in outcomes["rrf_only"].hits[:retriever.config.rerank_candidates]]
    row["ranked"]["oracle"] = sorted(head, key=lambda cid: -rel.get(cid, 0))
    if "full" in outcomes:
        row["logits"] = [(h.card_id, h.rerank_logit) for h in outcomes["full"].hits
                         if h.rerank_logit is not None]
    return row


def summarise(rows: list[dict]) -> dict:
    from attesta_retrieval.domain.metrics import ndcg_at

    answerable = [r for r in rows if r["relevant"]]
    unanswerable = [r for r in rows if not r["relevant"]]
    out: dict = {"n": len(rows), "answerable": len(answerable), "unanswerable": len(unanswerable),
                 "ndcg10": {}, "ndcg10_typo": {}, "answers": {}}
    for p in PATHS:
        got = [ndcg_at(r["ranked"][p], r["relevant"], 10) for r in answerable if p in r["ranked"]]
        if got:
            out["ndcg10"][p] = statistics.fmean(got)
        typo = [ndcg_at(r["ranked"][p], r["relevant"], 10) for r in answerable
                if p in r["ranked"] and r["style"] == "typo"]
        if typo:
            out["ndcg10_typo"][p] = statistics.fmean(typo)
        for lang in sorted({r.get("lang") or "en" for r in answerable}):
            got_lang = [ndcg_at(r["ranked"][p], r["relevant"], 10) for r in answerable
                        if p in r["ranked"] and (r.get("lang") or "en") == lang]
            if got_lang:
                out.setdefault("ndcg10_lang", {}).setdefault(lang, {})[p] = statistics.fmean(got_lang)
    for path in ("rrf_only", "full"):
        if not any(path in r["answers"] for r in rows):
            continue
        answered = [r for r in answerable if r["answers"][path]["status"] == "answered"]
        first_ok = [r for r in answered if r["relevant"].get(r["answers"][path]["cited"][0], 0) > 0]
        styles: dict[str, list[int]] = {}
        facets: dict[str, list[int]] = {}
        langs: dict[str, dict[str, list[int]]] = {}
        for r in answerable:
            s = styles.setdefault(r["style"], [0, 0])
            s[0] += r["answers"][path]["status"] == "answered"
            s[1] += 1
            for f in r.get("facets") or []:  # secondary styles too (a Portuguese voice question)
                c = facets.setdefault(f, [0, 0])
                c[0] += r["answers"][path]["status"] == "answered"
                c[1] += 1
        for r in rows:  # per language: answered / answerable, false / unanswerable, first citation
            cell = langs.setdefault(r.get("lang") or "en", {"answered": [0, 0], "false": [0, 0], "first": [0, 0]})
            said = r["answers"][path]["status"] == "answered"
            if r["relevant"]:
                cell["answered"][0] += said
                cell["answered"][1] += 1
                if said:
                    cell["first"][0] += r["relevant"].get(r["answers"][path]["cited"][0], 0) > 0
                    cell["first"][1] += 1
            else:
                cell["false"][0] += said
                cell["false"][1] += 1
        false = [r["id"] for r in unanswerable if r["answers"][path]["status"] == "answered"]
        out["answers"][path] = {
            "answered": len(answered), "answerable": len(answerable),
            "first_citation_relevant": len(first_ok),
            "false_answers": len(false), "false_ids": false, "unanswerable": len(unanswerable),
            "per_style": styles, "per_facet": facets, "per_lang": langs,
            "retrieval_ms_p50": pct([r["ms"][path] for r in rows], 50),
            "retrieval_ms_p95": pct([r["ms"][path] for r in rows], 95),
        }
    return out


def reliability_rows(rows: list[dict]):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from retrieval_quality import ece, reliability

    calib = [(logit, r["relevant"].get(cid, 0)) for r in rows for cid, logit in r.get("logits", [])]
    table = reliability(calib)
    return table, ece(table, len(calib)), len(calib)


def measure(args) -> None:
    from attesta_answer.adapters.gate_artefact import load_gate
    from attesta_answer.domain.extractive import OfflineGenerator
    from attesta_kb import load_cards
    from attesta_retrieval.adapters.embedder import Embedder
    from attesta_retrieval.adapters.reranker import Reranker
    from attesta_retrieval.service_layer.offline import build_index
    from attesta_retrieval.service_layer.reranker_training import default_reranker_dir, read_manifest
    from attesta_retrieval.service_layer.retrieval import HybridRetriever, RerankerSlot, RetrievalConfig
    from attesta_retrieval.service_layer.evidence import SentenceEvidence

    started = time.monotonic()
    index, _ = build_index(load_cards(), Path(args.state_dir), Embedder())
    slot = RerankerSlot()
    rdir = Path(args.reranker_dir) if args.reranker_dir else default_reranker_dir()
    manifest = None
    if not args.no_reranker:
        slot.set(Reranker(rdir))  # asked for a reranker and none loads: fail loudly
        manifest = read_manifest(rdir)
    evidence = None if args.no_evidence else SentenceEvidence(index.embedder)
    if evidence is not None and not args.no_warm:  # as the service does once ready: steady-state timings
        evidence.warm(list(index.cards.values()))
    multilingual = None
    if not args.no_multilingual:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from train_grounding_gate import build_multilingual

        multilingual = build_multilingual(argparse.Namespace(no_multilingual=False, state_dir=args.state_dir),
                                          list(index.cards.values()))
    retriever = HybridRetriever(index, slot, RetrievalConfig(rerank_budget_ms=600_000), evidence=evidence,
                                multilingual=multilingual)
    # The gate as the service loads it (ATTESTA_ANSWER_READER's default "auto": the pair reader
    # of the recipe the artefact pins, when it is on this machine).
    gate = load_gate(reader=args.reader, reader_dir=Path(args.reader_dir) if args.reader_dir else None)
    generator = OfflineGenerator(gate) if args.generator == "offline" else _llm_generator(args)
    generator.warm_up()
    answer_paths = None
    if args.generator == "llm":
        answer_paths = ("full",) if not args.no_reranker else ("rrf_only",)
    report: dict = {"label": args.label, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "reranker": str(rdir) if not args.no_reranker else None,
                    # the pair reader the gate judged with (None: reader-less models)
                    "pair_reader": {k: (getattr(gate.reader, "manifest", None) or {}).get(k)
                                    for k in ("version", "recipe_sha256", "sha256")}
                    if getattr(gate.reader, "manifest", None) else None,
                    "reranker_manifest": {k: (manifest or {}).get(k) for k in ("steps", "seconds", "config", "data", "calibration")},
                    "splits": {}}
    for split in args.splits:
        questions = load_split(split)[:: args.every]
        questions = questions[: args.limit] if args.limit else questions

        async def run_all(questions=questions):
            return [await run_question(retriever, generator, q, answer_paths=answer_paths)
                    for q in questions]

        rows = asyncio.run(run_all())
        summary = summarise(rows)
        if any("logits" in r for r in rows):
            table, err, pairs = reliability_rows(rows)
            summary["reliability"] = {"rows": table, "ece": err, "pairs": pairs}
        for r in rows:
            r.pop("logits", None)  # summarised in the reliability table; too bulky to keep
        if args.generator == "llm":
            summary["llm_reader"] = llm_reader_summary(rows)
        report["splits"][split] = {"summary": summary, "rows": rows}
        # Counts only: question ids (of a held-out split above all) stay in the results file.
        shown = {**summary, "answers": {p: {k: v for k, v in a.items() if k != "false_ids"}
                                        for p, a in summary["answers"].items()}}
        print(split, json.dumps(shown, indent=1, default=str)[:3000], file=sys.stderr)
        print("\n".join(summary_lines(split, summary)), file=sys.stderr)
    report["seconds"] = round(time.monotonic() - started)
    report["machine"] = f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs"
    results = Path(args.results_dir)
    results.mkdir(parents=True, exist_ok=True)
    # The per-question rows stay out of git-diff noise: one JSON line per question.
    out = results / f"answer_quality_{args.label}.json"
    out.write_text(json.dumps(report, default=str) + "\n")
    print(f"wrote {out}", file=sys.stderr)


def summary_lines(split: str, summary: dict) -> list[str]:
    """The summary as a reader wants it: per path, per language, per style and per facet. Counts
    only, never question ids, so it can be pasted into the docs for a held-out split."""
    lines = [f"== {split}: {summary['n']} questions, {summary['answerable']} answerable, "
             f"{summary['unanswerable']} the KB cannot answer",
             "nDCG@10: " + ", ".join(f"{p} {v:.3f}" for p, v in summary["ndcg10"].items())]
    for lang, per_path in sorted(summary.get("ndcg10_lang", {}).items()):
        lines.append(f"nDCG@10 [{lang}]: " + ", ".join(f"{p} {v:.3f}" for p, v in per_path.items()))
    if summary.get("ndcg10_typo"):
        lines.append("nDCG@10 typo: " + ", ".join(f"{p} {v:.3f}" for p, v in summary["ndcg10_typo"].items()))
    for path, a in summary["answers"].items():
        lines += [f"-- {path}: answered {_rate(a['answered'], a['answerable'])}, "
                  f"false answers {_rate(a['false_answers'], a['unanswerable'])}, "
                  f"first citation relevant {_rate(a['first_citation_relevant'], a['answered'])}, "
                  f"retrieval p50/p95 {a['retrieval_ms_p50']:.0f}/{a['retrieval_ms_p95']:.0f} ms"]
        for lang, cell in sorted(a.get("per_lang", {}).items()):
            lines.append(f"   [{lang}] answered {_rate(*cell['answered'])}, false {_rate(*cell['false'])}, "
                         f"first citation {_rate(*cell['first'])}")
        lines += [f"   style {s}: {_rate(*v)}" for s, v in sorted(a["per_style"].items())]
        lines += [f"   facet {f}: {_rate(*v)}" for f, v in sorted(a.get("per_facet", {}).items())]
    return lines


def _llm_generator(args):
    """The answer service's own LLM generator, pointed at the local model (issue #24 item 6)."""
    from attesta_answer.adapters.llm_generator import LLMGenerator
    from attesta_platform.llm import LLMConfig

    config = LLMConfig(base_url=args.llm_base_url, model="local", api_key="",
                       timeout_s=args.llm_budget_s, attempts=1)
    return LLMGenerator(config, budget_s=args.llm_budget_s)


def llm_reader_summary(rows: list[dict]) -> dict:
    """The LLM reader's own figures: generation time, failures and dropped citations."""
    answers = [a for r in rows for a in r["answers"].values()]
    times = [a["generate_ms"] for a in answers if a.get("generate_ms") is not None]
    return {"answers": len(answers),
            "failed": sum(1 for a in answers if a["status"] == "failed"),
            "with_dropped_citations": sum(1 for a in answers if a.get("dropped_citations")),
            "generate_ms_p50": pct(times, 50), "generate_ms_p95": pct(times, 95)}


# ---------------------------------------------------------------- the grounding decision
def tradeoff_lines(rows: list[dict], label: str) -> list[str]:
    """Answered / falsely answered counts by the gate's probability threshold, per path (the
    shipped thresholds are chosen by benchmarks/train_grounding_gate.py on out-of-fold dev
    probabilities; this is the same curve on the rows of one run)."""
    if not any(r.get("gate") for r in rows):
        return []
    out = []
    ans = [r for r in rows if r["relevant"]]
    una = [r for r in rows if not r["relevant"]]
    for path in ("rrf_only", "full"):
        if not any(path in (r.get("gate") or {}) for r in rows):
            continue
        shipped = sorted({f"{g['model']}: {g['threshold']:g}" for r in rows
                          if (g := (r.get("gate") or {}).get(path))})
        out += ["", f"Grounding trade-off ({label}, {path} context): answered if the gate's probability "
                f"reaches the threshold (shipped: {', '.join(shipped)}).", "",
                "| threshold | answerable answered | first citation relevant | unanswerable answered |",
                "|---|---|---|---|"]
        for step in range(1, 20):
            t = step / 20

            def p(r, path=path):
                return ((r.get("gate") or {}).get(path) or {}).get("p", -1.0)

            answered = [r for r in ans if p(r) >= t]
            first = sum(1 for r in answered if r["answers"][path]["cited"]
                        and r["relevant"].get(r["answers"][path]["cited"][0], 0) > 0)
            out.append(f"| {t:.2f} | {_rate(len(answered), len(ans))} | {first}/{len(answered)} | "
                       f"{_rate(sum(1 for r in una if p(r) >= t), len(una))} |")
    return out


# ---------------------------------------------------------------- rendering
def _rate(a: int, b: int) -> str:
    return f"{a}/{b} ({a / b:.0%})" if b else "-"


def render(out_path: Path) -> str:
    reports = {}
    for label in ("before", "after"):
        f = RESULTS / f"answer_quality_{label}.json"
        if f.exists():
            reports[label] = json.loads(f.read_text())
    labels = list(reports)
    lines = ["## Results", "",
             "Rendered by `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/answer_quality.py --render` "
             "from `benchmarks/results/answer_quality_{before,after}.json`, which "
             "`benchmarks/answer_quality.py --label <label>` measures. Do not edit by hand.", ""]
    for label, rep in reports.items():
        lines.append(f"- **{label}**: measured {rep['when']} in {rep['seconds']} s ({rep['machine']}); "
                     f"reranker: `{rep['reranker']}`"
                     + (f", {rep['reranker_manifest'].get('steps')} steps" if rep['reranker'] else " (none: full path not measured)"))
    lines.append("")
    for split in ("heldout", "dev"):
        if not all(split in r["splits"] for r in reports.values()):
            continue
        sums = {label: reports[label]["splits"][split]["summary"] for label in labels}
        any_sum = sums[labels[-1]]  # the latest run's question counts (a split can grow)
        title = ("Held-out split (`benchmarks/data/assistant_heldout.json`: never tuned on)"
                 if split == "heldout" else "Dev split (`benchmarks/data/assistant_dev.json`: thresholds chosen here)")
        lines += [f"### {title}", "",
                  f"{any_sum['n']} questions: {any_sum['answerable']} answerable, "
                  f"{any_sum['unanswerable']} the KB cannot answer.", "",
                  "| measure | " + " | ".join(f"{lb} {p}" for lb in labels for p in ("rrf_only", "full")) + " |",
                  "|---|" + "---|" * (2 * len(labels))]

        def cells(fn):
            vals = []
            for lb in labels:
                for p in ("rrf_only", "full"):
                    a = sums[lb]["answers"].get(p)
                    vals.append(fn(a) if a else "-")
            return " | ".join(vals)

        lines.append("| answerable questions answered | " + cells(lambda a: _rate(a["answered"], a["answerable"])) + " |")
        lines.append("| unanswerable questions answered (false answers) | " + cells(lambda a: _rate(a["false_answers"], a["unanswerable"])) + " |")
        lines.append("| first citation on a relevant card, when answered | " + cells(lambda a: _rate(a["first_citation_relevant"], a["answered"])) + " |")
        styles = sorted({s for lb in labels for p in sums[lb]["answers"] for s in sums[lb]["answers"][p]["per_style"]})
        for s in styles:
            lines.append(f"| … {s} answered | " + cells(lambda a, s=s: _rate(*a["per_style"].get(s, [0, 0]))) + " |")
        lines.append("| retrieval p50 / p95 ms (in process) | " + cells(lambda a: f"{a['retrieval_ms_p50']:.0f} / {a['retrieval_ms_p95']:.0f}") + " |")
        lines += ["", "nDCG@10 on the answerable questions, per path:", "",
                  "| path | " + " | ".join(labels) + " | typo questions: " + " | typo ".join(labels) + " |",
                  "|---|" + "---|" * (2 * len(labels))]
        for p in PATHS:
            vals = [f"{sums[lb]['ndcg10'][p]:.3f}" if p in sums[lb]["ndcg10"] else "-" for lb in labels]
            tvals = [f"{sums[lb]['ndcg10_typo'][p]:.3f}" if p in sums[lb]["ndcg10_typo"] else "-" for lb in labels]
            name = "oracle (fused top 20 sorted by true grade)" if p == "oracle" else p
            lines.append(f"| {name} | " + " | ".join(vals) + " | " + " | ".join(tvals) + " |")
        rows_after = reports[labels[-1]]["splits"][split]["rows"]
        lines += tradeoff_lines(rows_after, labels[-1])
        for lb in labels:
            rel = sums[lb].get("reliability")
            if not rel:
                continue
            lines += ["", f"Reliability of the displayed score ({lb}; every reranked candidate, "
                      f"{rel['pairs']} pairs; relevant = graded 1 or 2), expected calibration error "
                      f"**{rel['ece']:.3f}**:", "",
                      "| displayed score | pairs | mean sigmoid | share relevant | share answers |",
                      "|---|---|---|---|---|"]
            for lo, hi, n, mean_p, share_rel, share_ans in rel["rows"]:
                span = f"{round(lo * 100)}-{round(hi * 100) - (0 if hi == 1 else 1)}"
                lines.append(f"| {span} | {n} | - | - | - |" if not n else
                             f"| {span} | {n} | {mean_p:.2f} | {share_rel:.2f} | {share_ans:.2f} |")
        lines.append("")
    text = "\n".join(lines)
    marker = "<!-- generated below: benchmarks/answer_quality.py --render -->"
    if out_path.exists() and marker in out_path.read_text():
        head = out_path.read_text().split(marker)[0]
        text = head + marker + "\n\n" + text
    out_path.write_text(text + "\n")
    return text


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--label", default="after", help="results file name (before / after)")
    ap.add_argument("--splits", nargs="+", default=["heldout", "dev"],
                    help=f"question sets to measure: {', '.join(SPLITS)} or a NAME given by --split-file")
    ap.add_argument("--split-file", action="append", default=[], metavar="NAME=PATH",
                    help="measure a question file kept outside benchmarks/data under NAME (name it in "
                         "--splits), e.g. fresh=eval/assistant/heldout_2026-12-04_fresh_never_tune.json")
    ap.add_argument("--state-dir", default=str(ROOT / ".state" / "bench-retrieval-quality"))
    ap.add_argument("--reranker-dir", default=os.environ.get("ATTESTA_RERANKER_DIR"))
    ap.add_argument("--no-reranker", action="store_true", help="measure without the full path")
    ap.add_argument("--no-evidence", action="store_true",
                    help="retrieval sends no sentence evidence (the answer falls back to lexical)")
    ap.add_argument("--no-warm", action="store_true",
                    help="embed cards' sentences on demand (quicker probes; first-use timings)")
    ap.add_argument("--limit", type=int, default=None, help="first N questions per split (smoke runs)")
    ap.add_argument("--every", type=int, default=1,
                    help="every Nth question of each split (a sample for a slow reader)")
    ap.add_argument("--reader", choices=["auto", "on", "off"], default="auto",
                    help="the gate's pair reader, as ATTESTA_ANSWER_READER (auto: when trained on this machine)")
    ap.add_argument("--reader-dir", default=None, help="its folder (default: `attesta answer reader-dir`)")
    ap.add_argument("--generator", choices=["offline", "llm"], default="offline",
                    help="the reader: the shipped offline one, or the LLM generator on --llm-base-url "
                         "(answers on the full path only, or rrf_only with --no-reranker)")
    ap.add_argument("--llm-base-url", default="http://127.0.0.1:8086/v1")
    ap.add_argument("--llm-budget-s", type=float, default=180.0,
                    help="per answer (the chat's own budget is 12 s; this measures, it does not serve)")
    ap.add_argument("--start-llm", action="store_true", help="start `attesta run llm` for the run (one thread)")
    ap.add_argument("--render", action="store_true", help="only render docs/answer-quality.md")
    ap.add_argument("--no-multilingual", action="store_true",
                    help="no multilingual dense side (every question served the English way)")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "answer-quality.md"))
    ap.add_argument("--results-dir", default=str(RESULTS),
                    help="where the per-question results file goes; for a held-out split, a directory "
                         "outside the repository (its rows hold question ids and outcomes)")
    ap.add_argument("--no-render", action="store_true",
                    help="measure only: leave docs/answer-quality.md as it is")
    args = ap.parse_args(argv)
    for spec in args.split_file:
        name, _, path = spec.partition("=")
        if not name or not path or not Path(path).is_file():
            ap.error(f"--split-file wants NAME=PATH of an existing file, got {spec!r}")
        SPLITS[name] = Path(path)
    if unknown := [s for s in args.splits if s not in SPLITS]:
        ap.error(f"unknown split(s) {unknown}: choose from {list(SPLITS)} or add one with --split-file")
    if not args.render:
        with contextlib.ExitStack() as stack:
            if args.start_llm:
                from attesta_testing.llm import LocalLLMProcess

                log = Path(tempfile.mkdtemp(prefix="answer-quality-llm-")) / "llm.log"
                args.llm_base_url = stack.enter_context(LocalLLMProcess(log, ctx=4096)).base_url
            measure(args)
    if args.render or not args.no_render:
        print(render(Path(args.doc)))


if __name__ == "__main__":
    sys.exit(main())
