"""Words of a text: lower-cased tokens and the function words that say nothing about a subject.

Shared by the context optimiser (query terms), the offline writer and key-term extraction.
"""

from __future__ import annotations

from functools import lru_cache

# Splitting on a translated copy is three times faster than ``re.findall(r"\w+")``, which
# matters at 200 texts per query; punctuation beyond this table stays attached to its word.
_PUNCTUATION = str.maketrans(dict.fromkeys(
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\u00a0\u00ab\u00bb\u00b7\u2010\u2011\u2012\u2013\u2014\u2015"
    "\u2018\u2019\u201a\u201c\u201d\u201e\u2022\u2026\u2039\u203a", " "))

#: Function words that say nothing about what a query asks for. Months, quarters and other
#: words that carry meaning in a query ("what shipped in March") are deliberately absent.
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been before
    being below between both but by can could did didn do does doesn doing don down during each
    either else etc ever every few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just let me more most my myself neither no nor not
    now of off on once only or other our ours ourselves out over own per please same she should so
    some such than that the their theirs them themselves then there these they this those through to
    too under until up upon us very via was we were what when where whether which while who whom
    whose why will with within without would yet you your yours yourself yourselves tell show give
    get find list describe explain summarise summarize many much
    """.split()
)


# Small caches: they exist so that dedup and prioritising, within one call, split each text
# once; across queries texts rarely repeat, and a large cache would pin them in memory.
@lru_cache(maxsize=512)
def words(text: str) -> tuple[str, ...]:
    """Lower-cased word tokens."""
    return tuple(text.lower().translate(_PUNCTUATION).split())


#: Words of any text that are never what it is about: common verbs, adverbs and adjectives (and
#: contractions) that repeat in conversation ("I think we need to make ..."). Key terms leave them out.
GENERAL_WORDS = frozenset(
    """
    able actually add added also always another anyone anything around ask asked asking away back bad best
    better big bit call called came can't come comes coming could couldn't day days didn't different does doesn't
    doing done don't down each easy else end enough even ever everyone everything example fact feel felt fine
    first found get gets getting give given go goes going gone good got great guess happy hard help here i'd i'll
    i'm i've idea isn't it's keep kind know known last later least less let let's like likely little long look
    looking lot lots made make makes making maybe mean means might mind more most move much must need needed
    needs new next nice now number often okay one ones other others part people perhaps place point possible
    pretty probably put quite rather real really right said same saw say saying says see seem seems seen set
    should shouldn't small some someone something sometimes soon sort start still stuff sure take takes taking
    talk talked than thank thanks that's then there's thing things think thinking thought time times today
    together told took try trying turn two use used useful uses using usually want wanted wants way ways we'll
    we're we've well went what's whatever who's whole why will won't work working works would wouldn't yeah yes
    yet you're
    """.split()
)
