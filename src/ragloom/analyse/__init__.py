"""Analysis over retrieved chunks: contradictions between lenses."""

from ragloom.analyse.contradictions import (
    Contradiction,
    Statement,
    detect_contradictions,
    sentences_with_claims,
)

__all__ = ["Contradiction", "Statement", "detect_contradictions", "sentences_with_claims"]
