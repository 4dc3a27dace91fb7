"""Sanitisers: exact strings for the reference rules."""

import pytest

from engine.pipeline.query import fuzzy_words, rerank_terms, sanitize_porter, sanitize_trigram


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("cache eviction", '"cache" OR "eviction"'),
        ("Cache cache CACHE", '"Cache"'),
        ("the cache", '"cache"'),
        ("the for", '"the" OR "for"'),  # all stopwords: keep them
        ("the and", '"the"'),  # 'and' is an FTS5 operator (dropped first)
        ("AND OR NOT near", '""'),
        ("", '""'),
        ("   ", '""'),
        ('a"b (c) {d} [e] *f: ^g ~h', '"a" OR "b" OR "c" OR "d" OR "e" OR "f" OR "g" OR "h"'),
        ("foo\u00a0bar", '"foo" OR "bar"'),  # JS \s includes NBSP
        ("foo\u3000bar", '"foo" OR "bar"'),  # and the ideographic space
        ("foo\x1cbar", '"foo\x1cbar"'),  # ...but not U+001C, which Python's split() would use
        ("café-guide", '"café-guide"'),
    ],
)
def test_porter(query, expected):
    assert sanitize_porter(query) == expected


def test_porter_and_mode():
    assert sanitize_porter("cache eviction", "AND") == '"cache" "eviction"'
    with pytest.raises(ValueError, match="mode"):
        sanitize_porter("x", "XOR")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("cache eviction", '"cache" OR "eviction"'),
        ("ab", ""),
        ("a b c", ""),  # no word of 3+ units
        ('"ab"c', '"abc"'),  # specials are removed, not spaced
        ("NEAR cache", '"NEAR" OR "cache"'),  # operators kept (quoted)
        ("AND cache", '"cache"'),  # ...though 'and' is a stopword
        ("🚀🔥", '"🚀🔥"'),  # 4 UTF-16 units: passes the 3-unit minimum
        ("the and", '"the" OR "and"'),
    ],
)
def test_trigram(query, expected):
    assert sanitize_trigram(query) == expected


def test_rerank_terms_keep_repeats_and_punctuation():
    assert rerank_terms("Cache, cache the x") == ["cache,", "cache"]
    assert rerank_terms("the and") == ["the", "and"]


def test_fuzzy_words():
    assert fuzzy_words("  Replicaton the ab deployment ") == ["replicaton", "deployment"]
