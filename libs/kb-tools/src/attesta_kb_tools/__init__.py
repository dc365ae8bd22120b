"""attesta_kb_tools: what makes and exercises the KB, kept out of every runtime image.

- ``builder``: the deterministic generator of the committed data files (the runtime
  ``attesta_kb/data/`` and this package's ``data/degraded_cards.jsonl``), from the seeds in
  ``_vocab.py`` and ``_brands_seed.py``;
- ``generate``: the streaming scale-out of the KB for benchmarks;
- ``sites``: the local, fictional brand websites that ground-truth refreshes are tested against
  (including an SSRF-bait redirect);
- ``fixtures``: the deliberately broken cards that tests of graceful degradation use.

Installed by scripts/install.sh for development, tests and benchmarks, and into the Docker
``tools`` image (the demo's brand sites); never into a service's image. See README.md.
"""
