"""The judge's modes measured on one judge case file (issue #28): the heuristic first, then the
judge in each mode asked for, per class and per language, with seconds per verdict and the load.

    .venv/bin/python benchmarks/judge_modes.py eval/classifier/judge_dev2.json --mode offline
    flock /tmp/attesta-heavy.lock .venv/bin/python benchmarks/judge_modes.py FILE \\
        --mode offline --mode combined --mode llm-claims --start-llm    # its own `attesta run llm`
    ... --llm-base-url http://127.0.0.1:8086/v1   # or a local LLM process already running
    ... --show-errors           # every case the judge got wrong or left pending, with its reason
    ... --json results.json     # the raw results, one row per case and mode
    ... --llm-cache /tmp/judge-llm-cache/FILE.jsonl   # record the model's per-claim replies
        (word, logprob, the first tokens' top logprobs) once, and replay them: without
        --start-llm / a server, a question not recorded leaves its pair pending (counted)
    ... --set CONTRADICTED_MIN_P=0.8   # a judging constant for this run only (threshold sweeps)
    ... --ask-all   # while recording: no model verdict settles a pair, so every claim that
        needs the model is asked and any later variant of the rules finds its replies recorded

A case file has the shape of ``eval/classifier/judge_dev2.json``: ``brands`` (name, aliases,
domains, facts with type and text) and ``cases`` (id, brand, kind, label, lang, prompt, answer).
Whoever tunes the judge runs this on dev files only; the lead runs it once on the held-out file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
import types
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

CLASSES = ("STRONG", "DESCRIPTIVE", "ECHO", "CONFABULATED", "ABSENT")
AT = datetime(2026, 12, 1, tzinfo=UTC)


def load_cases(path: Path) -> tuple[dict[str, Any], dict[str, list[Any]], list[dict[str, Any]]]:
    """Brands, their facts and the cases of one file, as the classifier's domain objects."""
    from attesta_classifier.domain.model import Brand, Fact

    doc = json.loads(path.read_text(encoding="utf-8"))
    brands, facts = {}, {}
    for key, b in doc["brands"].items():
        brands[key] = Brand(key, "ws-eval", b["name"], tuple(b.get("aliases", ())), tuple(b.get("domains", ())))
        source = b.get("source") or f"https://{(b.get('domains') or ['example.invalid'])[0]}/"
        facts[key] = [Fact("f" + hashlib.sha256(f"{key}\n{f['text']}".encode()).hexdigest()[:10], key,
                           f.get("type", "manual"), f["text"], source, AT, source,
                           hashlib.sha256(f["text"].encode()).hexdigest()) for f in b["facts"]]
    return brands, facts, doc["cases"]


class RecordingClient:
    """Tuning aid (never product code): the judge's model client, with each one-word reply kept
    in a JSON-lines file keyed by the exact question, and replayed from it. A reply the server
    gives is stored with the logprobs of its first tokens, so a threshold can be tuned on
    recorded replies without the model. ``live`` False: a question not recorded is unavailable."""

    def __init__(self, client: Any, path: Path, live: bool) -> None:
        self._client, self._path, self._live = client, path, live
        self._seen: dict[str, dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                self._seen[row["key"]] = row
        self.hits = self.misses = 0
        self._last: Any = None
        post = client._post

        async def recording_post(body: dict[str, Any], attempt: int) -> Any:
            self._last = await post(body, attempt)
            return self._last

        client._post = recording_post

    @property
    def model(self) -> str:
        return str(self._client.model)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def complete_choice(self, messages: list[dict[str, str]], choices: tuple[str, ...], **kw: Any) -> Any:
        from attesta_platform.llm import Choice, LLMUnavailable

        key = hashlib.sha256(json.dumps([messages, choices, kw.get("constraint")], ensure_ascii=False,
                                        sort_keys=True).encode()).hexdigest()
        row = self._seen.get(key)
        if row is not None:
            self.hits += 1
            return Choice(row["value"], row["logprob"])
        self.misses += 1
        if not self._live:
            raise LLMUnavailable("not recorded")
        choice = await self._client.complete_choice(messages, choices, **kw)
        try:
            tokens = self._last.json()["choices"][0]["logprobs"]["content"][:4]
        except (AttributeError, KeyError, IndexError, TypeError, ValueError):
            tokens = None
        row = {"key": key, "value": choice.value, "logprob": choice.logprob, "tokens": tokens,
               "claim": messages[-1]["content"][-300:]}
        self._seen[key] = row
        with self._path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
        return choice


def build(mode: str, args: argparse.Namespace) -> Any:
    from attesta_classifier.adapters.judges import build_judge

    judge = build_judge(types.SimpleNamespace(
        judge=mode, llm_base_url=args.llm_base_url, llm_model=args.llm_model,
        llm_timeout_s=args.llm_timeout_s, judge_verdict_attempts=2, llm_constraint=args.llm_constraint,
        judge_second_look=args.second_look))
    if args.llm_cache and getattr(judge, "_client", None) is not None:
        judge._client = RecordingClient(judge._client, args.llm_cache, args.live)
    return judge


async def run_mode(mode: str, args: argparse.Namespace, brands: dict[str, Any], facts: dict[str, list[Any]],
                   cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from attesta_classifier.adapters.judges import JudgeUnavailable
    from attesta_classifier.domain.heuristic import decide
    from attesta_classifier.domain.model import Run

    judge = build(mode, args)
    out = []
    for case in cases:
        run = Run(case["id"], "ws-eval", "engine", "model", case["prompt"], case["answer"],
                  hashlib.sha256(case["answer"].encode()).hexdigest())
        brand = brands[case["brand"]]
        d = decide(run, brand)
        row = {"id": case["id"], "label": case["label"], "lang": case["lang"], "kind": case.get("kind", ""),
               "answer": case["answer"], "mode": mode}
        if d is not None:
            out.append({**row, "pred": d.citation_class.value, "by": "heuristic", "reason": d.reason})
            continue
        t0, calls = time.perf_counter(), getattr(judge, "llm_calls", 0)
        try:
            d = await judge.judge(run=run, brand=brand, facts=facts[case["brand"]])
            pred, reason, model = d.citation_class.value, d.reason, d.judge_model
        except JudgeUnavailable as exc:
            pred, reason, model = "PENDING", str(exc), getattr(judge, "model_name", "")
        out.append({**row, "pred": pred, "by": "judge", "reason": reason, "judge_model": model,
                    "judge_s": time.perf_counter() - t0, "llm_calls": getattr(judge, "llm_calls", 0) - calls})
    close = getattr(judge, "aclose", None)
    if close is not None:
        await close()
    client = getattr(judge, "_client", None)
    if isinstance(client, RecordingClient):
        print(f"recorded replies: {client.hits} replayed, {client.misses} not recorded"
              + ("" if args.live else " (their pairs pending)"), flush=True)
    return out


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.0f}% ({n}/{d})" if d else "n/a"


def report(rows: list[dict[str, Any]], mode: str, load: tuple[str, str]) -> str:
    judged = [r for r in rows if r["by"] == "judge"]
    secs = sorted(r["judge_s"] for r in judged) or [0.0]
    calls = sum(r.get("llm_calls", 0) for r in judged)
    reached = sorted(r["judge_s"] for r in judged if r.get("llm_calls"))
    per_hour = f"{3600 / statistics.fmean(reached):.0f}" if reached else "n/a"
    lines = [f"### mode `{mode}`", "",
             f"judge model `{next((r['judge_model'] for r in judged if r.get('judge_model')), '-')}`; "
             f"{len(rows)} cases, {len(judged)} reached the judge; seconds per verdict p50 "
             f"{statistics.median(secs):.2f}, p95 {secs[int(0.95 * (len(secs) - 1))]:.2f}, mean "
             f"{statistics.fmean(secs):.2f}; LLM calls {calls} "
             f"({len(reached)} of {len(judged)} pairs reached the LLM: p50 "
             f"{statistics.median(reached) if reached else 0:.1f} s, {per_hour} verdicts/hour on one core); "
             f"/proc/loadavg before `{load[0]}`, after `{load[1]}`", "",
             "| class | lang | emitted | precision | expected | decided | right | pending |",
             "|---|---|---|---|---|---|---|---|"]
    # Every language of the file gets its rows (the held-out sets have a few Spanish answers too).
    langs = [*sorted({r["lang"] for r in rows}, key=lambda lang: (lang not in ("en", "pt"), lang)), "all"]
    for c in CLASSES:
        for lang in langs:
            sub = [r for r in rows if lang == "all" or r["lang"] == lang]
            emitted = [r for r in sub if r["pred"] == c]
            expected = [r for r in sub if r["label"] == c]
            if not emitted and not expected:
                continue
            decided = [r for r in expected if r["pred"] != "PENDING"]
            lines.append(f"| {c} | {lang} | {len(emitted)} | "
                         f"{_pct(sum(r['label'] == c for r in emitted), len(emitted))} | {len(expected)} | "
                         f"{_pct(len(decided), len(expected))} | {_pct(sum(r['pred'] == c for r in expected), len(expected))} | "
                         f"{sum(r['pred'] == 'PENDING' for r in expected)} |")
    lines += ["", "| lang | right / wrong / pending |", "|---|---|"]
    for lang in langs:
        sub = [r for r in rows if lang == "all" or r["lang"] == lang]
        right = sum(r["pred"] == r["label"] for r in sub)
        pending = sum(r["pred"] == "PENDING" for r in sub)
        lines.append(f"| {lang} ({len(sub)}) | {right} / {len(sub) - right - pending} / {pending} |")
    right = sum(r["pred"] == r["label"] for r in rows)
    pending = sum(r["pred"] == "PENDING" for r in rows)
    lines += ["", f"right {right}, wrong {len(rows) - right - pending}, pending {pending} of {len(rows)}"]
    return "\n".join(lines)


def errors(rows: list[dict[str, Any]]) -> str:
    out = []
    for r in rows:
        if r["pred"] != r["label"]:
            out.append(f"- {r['id']} [{r['lang']}] label={r['label']} pred={r['pred']} by={r['by']}\n"
                       f"    answer: {r['answer']}\n    reason: {r['reason'][:400]}")
    return "\n".join(out) or "(none)"


def _loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--mode", action="append", choices=["offline", "llm-claims", "combined", "openai"])
    parser.add_argument("--llm-base-url", default=os.environ.get("ATTESTA_LLM_BASE_URL", "http://127.0.0.1:8086/v1"))
    parser.add_argument("--llm-model", default=os.environ.get("ATTESTA_LLM_MODEL", "qwen2.5-coder-1.5b-instruct-q4_k_m"))
    parser.add_argument("--start-llm", action="store_true", help="start `attesta run llm` for the run (one thread)")
    parser.add_argument("--llm-timeout-s", type=float, default=120.0)
    parser.add_argument("--llm-constraint", default="gbnf", choices=["gbnf", "json_schema"])
    parser.add_argument("--only", default="", help="only cases whose id contains this")
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--llm-cache", type=Path, help="record / replay the model's replies (JSON lines)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="set a float constant of domain.judging for this run (tuning only)")
    parser.add_argument("--ask-all", action="store_true", help="recording: no model verdict settles a pair")
    parser.add_argument("--second-look", action="store_true",
                        help="ask an unsure 'contradicted' again in other words (the judge's option, off by default)")
    args = parser.parse_args(argv)
    for item in args.set:
        from attesta_classifier.domain import judging

        name, _, value = item.partition("=")
        if not isinstance(getattr(judging, name, None), float):
            parser.error(f"--set: judging.{name} is not a float constant")
        setattr(judging, name, float(value))
    if args.ask_all:
        from attesta_classifier.domain import judging

        decided_by_model = judging.model_outcome

        def never_settles(*a: Any, **kw: Any) -> Any:
            o = decided_by_model(*a, **kw)
            return o if o.status not in ("contradicted", "absent") else dataclasses.replace(o, status="unknown")

        judging.model_outcome = never_settles  # type: ignore[assignment]
    # Without a server to ask (--start-llm, or --llm-base-url given), only recorded replies count.
    args.live = args.start_llm or "--llm-base-url" in (argv or sys.argv)
    if "never_tune" in args.file.name and (args.show_errors or args.only):
        # eval/README.md: a held-out file is measured for totals; its cases and errors are not read.
        parser.error("--show-errors and --only are refused on a held-out (never_tune) file")
    brands, facts, cases = load_cases(args.file)
    cases = [c for c in cases if args.only in c["id"]]
    everything: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        if args.start_llm:
            from attesta_testing.llm import LocalLLMProcess

            log = Path(tempfile.mkdtemp(prefix="judge-modes-llm-")) / "llm.log"
            args.llm_base_url = stack.enter_context(LocalLLMProcess(log, ctx=4096)).base_url
        for mode in args.mode or ["offline"]:
            before = _loadavg()
            rows = asyncio.run(run_mode(mode, args, brands, facts, cases))
            print(report(rows, mode, (before, _loadavg())), flush=True)
            if args.show_errors:
                print("\nwrong or pending:\n" + errors(rows), flush=True)
            print(flush=True)
            everything += rows
    if args.json:
        args.json.write_text(json.dumps(everything, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
