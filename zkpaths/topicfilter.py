"""Wildcard subscriptions of the old consumer: which topics a white/black list selects.

Mirrors ``kafka.consumer.TopicFilter`` (0.10.2.2): the regex is normalised (trimmed, ','
becomes '|', spaces dropped, surrounding quotes stripped), matched against the whole topic
name, and internal topics are excluded unless ``exclude.internal.topics=false``. The
regex is evaluated by Python's ``re``; the two dialects agree on everything topic regexes
use in practice, and a regex ``re`` cannot compile is reported, not guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from zkpaths.codecs.consumer import BLACK_LIST, WHITE_LIST, ConsumerRegistration
from zkpaths.errors import LegacyFormatError

#: ``Topic.InternalTopics`` of 0.10.2.2: only the offsets topic. (0.11 added
#: ``__transaction_state``; a 0.10 consumer's ".*" does select it.)
INTERNAL_TOPICS_0_10 = frozenset({"__consumer_offsets"})
INTERNAL_TOPICS_0_11 = frozenset({"__consumer_offsets", "__transaction_state"})

_LEADING_QUOTES = re.compile(r"""^["']+""")
_TRAILING_QUOTES = re.compile(r"""["']+$""")


def normalise_regex(raw: str) -> str:
    """The regex the old consumer actually uses for ``raw`` (``TopicFilter.regex``)."""
    text = raw.strip("".join(chr(c) for c in range(0x21)))  # Java's String.trim
    text = text.replace(",", "|").replace(" ", "")
    return _TRAILING_QUOTES.sub("", _LEADING_QUOTES.sub("", text))


@dataclass(frozen=True)
class TopicFilter:
    """A white list (topics matching) or black list (topics not matching)."""

    pattern: str
    regex: str
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.pattern not in (WHITE_LIST, BLACK_LIST):
            raise LegacyFormatError("topic filter pattern", self.pattern, "not a wildcard pattern")
        regex = normalise_regex(self.regex)
        try:
            compiled = re.compile(regex)
        except (re.error, RecursionError, OverflowError) as exc:
            raise LegacyFormatError(
                "topic regex", self.regex, f"does not compile ({exc})"
            ) from None
        object.__setattr__(self, "regex", regex)
        object.__setattr__(self, "_compiled", compiled)

    def allows(
        self,
        topic: str,
        exclude_internal_topics: bool = True,
        internal_topics: frozenset[str] = INTERNAL_TOPICS_0_10,
    ) -> bool:
        """``isTopicAllowed``: whether a consumer with this filter subscribes to ``topic``."""
        if exclude_internal_topics and topic in internal_topics:
            return False
        matched = self._compiled.fullmatch(topic) is not None
        return matched if self.pattern == WHITE_LIST else not matched

    def select(
        self,
        topics: Iterable[str],
        exclude_internal_topics: bool = True,
        internal_topics: frozenset[str] = INTERNAL_TOPICS_0_10,
    ) -> list[str]:
        """The topics among ``topics`` this filter allows, in their given order."""
        return [t for t in topics if self.allows(t, exclude_internal_topics, internal_topics)]


def registration_filter(reg: ConsumerRegistration) -> TopicFilter | None:
    """The filter of a wildcard registration, or ``None`` for a static one.

    Like ``TopicCount.constructTopicCount``, an empty subscription counts as static, and
    only the first subscription entry is used as the regex.
    """
    if not reg.is_wildcard or not reg.subscription:
        return None
    regex = next(iter(reg.subscription))
    return TopicFilter(reg.pattern, regex)
