"""Smoke test of the real local LLM process (`attesta run llm`: xllamacpp + the pinned Qwen2.5
GGUF on one thread): health and readiness, and one short constrained verdict through the
project's own OpenAI-compatible client, as the classifier's judge and the answer service call
it. Kept short: one model load and two completions of a few tokens."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import httpx
import pytest

from attesta_llm.domain.model import QWEN25_CODER_1_5B_Q4_K_M
from attesta_testing.llm import LocalLLMProcess, free_port
from attesta_platform.llm import ChatCompletionsClient, LLMConfig

pytestmark = pytest.mark.integration

VERDICTS = ["supported", "contradicted", "not_enough_info"]
VERDICT_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["verdict"],
                  "properties": {"verdict": {"type": "string", "enum": VERDICTS}}}
MESSAGES = [
    {"role": "system", "content": "You check one claim against the facts. Answer with JSON."},
    {"role": "user", "content": "Facts: Lumora sells solar lamps made in Portugal.\n"
                                "Claim: Lumora sells solar lamps.\n"
                                "Is the claim supported, contradicted, or is there not enough info?"},
]


def test_health_and_readiness(local_llm: LocalLLMProcess) -> None:
    assert httpx.get(f"{local_llm.health_url}/healthz").json() == {"status": "ok", "service": "llm"}
    ready = httpx.get(f"{local_llm.health_url}/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    models = httpx.get(f"{local_llm.base_url}/models").json()
    assert models["data"][0]["id"] == QWEN25_CODER_1_5B_Q4_K_M.name


async def test_a_json_schema_constrained_verdict_through_the_shared_client(
        local_llm: LocalLLMProcess) -> None:
    client = ChatCompletionsClient(LLMConfig(base_url=local_llm.base_url, model="local",
                                             timeout_s=120, attempts=1))
    try:
        out = await client.complete_json(MESSAGES, schema_name="claim_verdict",
                                         json_schema=VERDICT_SCHEMA, max_tokens=24)
    finally:
        await client.aclose()
    assert set(out) == {"verdict"} and out["verdict"] in VERDICTS, out


def test_a_gbnf_constrained_one_word_verdict(local_llm: LocalLLMProcess) -> None:
    grammar = "root ::= " + " | ".join(f'"{v}"' for v in VERDICTS)
    resp = httpx.post(f"{local_llm.base_url}/chat/completions", timeout=120, json={
        "model": "local", "messages": MESSAGES, "max_tokens": 8, "temperature": 0,
        "grammar": grammar})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["choices"][0]["message"]["content"] in VERDICTS, body
    assert body["usage"]["completion_tokens"] <= 8


def test_a_web_page_of_another_origin_cannot_drive_the_model(local_llm: LocalLLMProcess) -> None:
    # llama.cpp allows every origin by default; a page the developer has open must not be
    # able to read answers from (or queue work on) the model on their loopback.
    preflight = httpx.options(f"{local_llm.base_url}/chat/completions", headers={
        "Origin": "https://attacker.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert preflight.headers.get("access-control-allow-origin", "") in ("", "null"), preflight.headers


def test_a_model_file_with_another_hash_is_refused_before_loading(tmp_path: Path) -> None:
    fake = tmp_path / "not-the-model.gguf"
    fake.write_bytes(b"GGUF but not the pinned model\n")
    actual = hashlib.sha256(fake.read_bytes()).hexdigest()
    llm = LocalLLMProcess(tmp_path / "llm.log", env={"ATTESTA_LLM_LOCAL_MODEL_PATH": str(fake)})
    with pytest.raises(RuntimeError) as refused:
        llm.start(timeout_s=60)
    assert llm.proc is not None and llm.proc.returncode == 2
    message = str(refused.value)
    assert "refusing to load" in message and str(fake) in message
    assert f"expected {QWEN25_CODER_1_5B_Q4_K_M.sha256}" in message and actual in message
    with pytest.raises(httpx.ConnectError):  # it never started its health door
        httpx.get(f"{llm.health_url}/healthz")


def test_attesta_llm_model_path_refuses_a_wrong_hash_too(tmp_path: Path) -> None:
    import subprocess

    fake = tmp_path / "m.gguf"
    fake.write_bytes(b"x")
    out = subprocess.run([sys.executable, "-m", "attesta_platform.cli", "llm", "model-path"],
                         env={**os.environ, "ATTESTA_LLM_LOCAL_MODEL_PATH": str(fake),
                              "ATTESTA_LLM_LOCAL_MODEL_SHA256": "0" * 64},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and f"expected {'0' * 64}" in out.stderr, out
    assert hashlib.sha256(b"x").hexdigest() in out.stderr and out.stdout == ""


def test_a_taken_port_is_named_and_nothing_is_loaded(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        llm = LocalLLMProcess(tmp_path / "llm.log")
        llm.port = taken.getsockname()[1]
        llm.env["ATTESTA_LLM_LOCAL_PORT"] = str(llm.port)
        with pytest.raises(RuntimeError) as refused:
            llm.start(timeout_s=60)
    assert llm.proc is not None and llm.proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{llm.port}" in str(refused.value)
