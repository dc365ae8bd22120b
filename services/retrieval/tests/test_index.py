"""The index follows the KB topic: unchanged cards cost nothing, changed cards are re-embedded,
deletes and sweeps remove, a restart resumes from the persisted Chroma, and duplicated or
reordered events leave the same index as the compacted topic would."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from attesta_retrieval.adapters.dense_store import DenseStore, make_client
from attesta_retrieval.adapters.sparse import SparseIndex
from attesta_retrieval.domain.model import Card
from attesta_retrieval.service_layer.indexing import CardEvent, KbIndex

pytestmark = pytest.mark.unit


def card(cid: str, version: int = 0, words: int = 40) -> Card:
    text = " ".join(f"{cid}-v{version}-w{i}" for i in range(words))
    return Card(cid, f"title {cid}", text, f"https://kb.example/{cid}", {"license": "CC0-1.0"},
                f"{version:064x}")


def make_index(path, embedder, collection="kb-test") -> KbIndex:
    dense = DenseStore(make_client(path, None), collection)
    return KbIndex(dense, embedder, SparseIndex(None), chunk_words=20, overlap_words=5)


def ev(c: Card | str, offset: int, partition: int = 0) -> CardEvent:
    if isinstance(c, str):
        return CardEvent(c, partition, offset, None)
    return CardEvent(c.card_id, partition, offset, c)


def test_unchanged_card_does_no_work_changed_card_reembeds(tmp_path, hashing_embedder):
    emb = hashing_embedder()
    idx = make_index(tmp_path, emb)
    idx.apply([ev(card("a"), 0), ev(card("b"), 1)])
    first = emb.texts_embedded
    assert first == 6  # 40 words in windows of 20 overlapping by 5 -> 3 chunks per card
    idx.apply([ev(card("a"), 2)])  # same content, new offset (a re-seed)
    assert emb.texts_embedded == first and idx.stats.unchanged == 1
    idx.apply([ev(card("a", version=1), 3)])
    assert emb.texts_embedded == first + 3
    assert idx.cards["a"].content_sha256 == f"{1:064x}"
    assert idx.dense.stored_hashes() == {"a": f"{1:064x}", "b": f"{0:064x}"}


def test_restart_resumes_from_the_persisted_store_and_sweeps_what_vanished(tmp_path,
                                                                         hashing_embedder):
    idx = make_index(tmp_path, hashing_embedder())
    idx.apply([ev(card("a"), 0), ev(card("b"), 1), ev(card("c"), 2)])
    emb = hashing_embedder()
    again = make_index(tmp_path, emb)  # a new process on the same state dir
    # The topic now has a and a changed b; c was deleted and compacted away meanwhile.
    again.apply([ev(card("a"), 0), ev(card("b", version=2), 1)])
    assert emb.texts_embedded == 3  # only b
    assert again.sweep_unseen() == 1
    assert again.dense.stored_hashes() == {"a": f"{0:064x}", "b": f"{2:064x}"}
    assert set(again.cards) == {"a", "b"}


def test_stored_hashes_are_read_back_in_pages(tmp_path, hashing_embedder, monkeypatch):
    """At 50k cards one unbounded read of every chunk failed inside Chroma ("too many SQL
    variables"); the store reads in pages, and pages that split a card's chunks still see
    every card whole."""
    idx = make_index(tmp_path, hashing_embedder())
    idx.apply([ev(card(f"c{i}", version=i), i) for i in range(7)])  # 21 chunks
    monkeypatch.setattr(DenseStore, "READ_PAGE", 4)
    again = make_index(tmp_path, hashing_embedder())
    assert again.dense.stored_hashes() == {f"c{i}": f"{i:064x}" for i in range(7)}


def test_interrupted_write_is_redone(tmp_path, hashing_embedder):
    idx = make_index(tmp_path, hashing_embedder())
    idx.apply([ev(card("a"), 0)])
    # Simulate a crash mid-write: one chunk of three is missing from Chroma.
    idx.dense._col.delete(ids=["a#2"])  # noqa: SLF001 - reaching in to break it for real
    emb = hashing_embedder()
    again = make_index(tmp_path, emb)
    again.apply([ev(card("a"), 0)])
    assert emb.texts_embedded == 3
    assert again.dense.stored_hashes() == {"a": f"{0:064x}"}


def test_delete_removes_the_card_everywhere(tmp_path, hashing_embedder):
    idx = make_index(tmp_path, hashing_embedder())
    idx.apply([ev(card("a"), 0), ev(card("b"), 1)])
    idx.apply([ev("a", 2)])
    idx.rebuild_sparse()
    assert set(idx.cards) == {"b"}
    assert idx.dense.stored_hashes() == {"b": f"{0:064x}"}
    assert {cid for cid, _ in idx.sparse.search("a-v0-w1 b-v0-w1", 10)} == {"b"}


def test_stale_redelivery_is_ignored(tmp_path, hashing_embedder):
    idx = make_index(tmp_path, hashing_embedder())
    idx.apply([ev(card("a", 1), 5)])
    idx.apply([ev(card("a", 0), 3)])  # an older offset read again after a newer one
    assert idx.cards["a"].content_sha256 == f"{1:064x}" and idx.stats.stale == 1


# Each card's history on its partition: versions at increasing offsets, None = deleted.
histories = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=1, max_size=4),
    min_size=1,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(histories=histories, data=st.data())
def test_duplicates_and_reordering_converge_to_the_compacted_topic(tmp_path, hashing_embedder,
                                                                  histories, data):
    events, offset = [], 0
    for cid, versions in histories.items():
        for v in versions:
            events.append(ev(cid if v is None else card(cid, v, words=10), offset, partition=0))
            offset += 1
    # Delivery: every event at least once, duplicates anywhere, in arbitrary batches, and the
    # order inside and across batches shuffled (a stale copy may come after a newer one).
    delivered = events + data.draw(st.lists(st.sampled_from(events), max_size=6))
    delivered = data.draw(st.permutations(delivered))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(delivered)), max_size=3)))
    batches = [delivered[a:b] for a, b in zip([0, *cuts], [*cuts, len(delivered)], strict=True)]

    idx = make_index(tmp_path / uuid.uuid4().hex, hashing_embedder(), collection="kb-prop")
    # Replaying the topic in order, as a fresh instance does, is the reference.
    reference = make_index(tmp_path / uuid.uuid4().hex, hashing_embedder(), collection="kb-prop")
    for batch in batches:
        idx.apply(batch)
    reference.apply(events)

    latest = {}
    for e in events:
        latest[e.card_id] = e
    expected = {cid: e.card.content_sha256 for cid, e in latest.items() if e.card is not None}
    # Out-of-order delivery of *older* copies after newer ones is ignored; an older copy that
    # arrives first is overwritten later. Either way the end state is the latest per card.
    assert {cid: c.content_sha256 for cid, c in idx.cards.items()} == expected
    assert idx.dense.stored_hashes() == expected == reference.dense.stored_hashes()
