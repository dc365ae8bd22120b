"""attesta_kb: the verified, 100% synthetic knowledge base shipped with Attesta.

Not a medical device and not medical advice: every medicine, condition, procedure,
company and number in the data files is fictional. See libs/kb/README.md.
"""

from .dataset import (
    SPLITS,
    Record,
    cards_by_id,
    get_brand,
    load_brands,
    load_cards,
    load_lookalikes,
    load_queries,
)

__all__ = [
    "SPLITS",
    "Record",
    "cards_by_id",
    "get_brand",
    "load_brands",
    "load_cards",
    "load_lookalikes",
    "load_queries",
]
