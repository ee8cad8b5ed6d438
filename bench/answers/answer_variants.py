"""Answerer variants that lost their measurements, kept beside the bench scripts that measured them.

Neither is part of `ragfunnel ask`; each is an `Answerer` subclass over one of its stages, so that a registered
table can still be re-run (docs/results/registry.toml):

- `QuoteFirstAnswerer` (the `quote_first` arm of answer_format.py): the reply copies its supporting line first, then
  answers from it. On 30 + 30 tuning questions: fewer refusals, worse answers (gold span 0.067 vs 0.100,
  docs/results/answers/answer_format.md). The prompt builders and the local model's grammar keep the format
  (`build_prompt(quote_first=True)`, `llm.answer_grammar`); this only asks for it.
- `RepairingAnswerer` (answer_replay.py --repair-citations): a reply whose citation fails the checks keeps its answer
  when a shown line holds every word the answer adds to the question (`citations.supporting_lines`; the one most
  similar to the question, if it passes the relevance check): that line becomes the citation and a note says so.
  Replayed on tuning questions it turned 5 of 9 false refusals into answers and changed one answer, all 6 wrong
  (docs/results/answers/answers_repair.md).

A script beside this one imports it as `answer_variants` (Python puts the script's folder on the path).
"""

from __future__ import annotations

from typing import Any

from ragfunnel.generate.answer import Answerer
from ragfunnel.generate.citations import CheckedCitation, supporting_lines, validate
from ragfunnel.generate.prompt import Prompt

MAX_REPAIR_CANDIDATES = 32  # shown lines embedded to re-anchor one answer (~0.3 s on 2 cores)


class QuoteFirstAnswerer(Answerer):
    """The Answerer asking for the quote-first reply format (both prompts, the first and the stricter retry)."""

    def _build_prompt(self, *args: Any, **style: Any) -> Prompt:
        return super()._build_prompt(*args, quote_first=True, **style)


class RepairingAnswerer(Answerer):
    """The Answerer that re-anchors a failed citation to the shown line that holds the answer, instead of retrying."""

    def _rescue(self, question: str, answer: str, prompt: Prompt,
                problem: str) -> tuple[list[CheckedCitation], str] | None:
        repaired = self._repair(question, answer, prompt)
        if repaired is None:
            return None
        return [repaired], (f"the reply had {problem}; cited instead the shown line that holds every word its answer "
                            f"adds to the question: {repaired.label}, \"{repaired.quote}\"")

    def _repair(self, question: str, answer: str, prompt: Prompt) -> CheckedCitation | None:
        """The shown line that holds every word the answer adds to the question, as a citation, or None.

        Of several such lines the one closest to the question (cosine) is taken, and it must pass the relevance check;
        without an encoder the first one in prompt order."""
        shown = [(s.sid, s.doc, s.lines) for s in prompt.sources]
        raw = supporting_lines(answer, question, shown)[:MAX_REPAIR_CANDIDATES]
        candidates = validate(raw, prompt.by_id, self.pipeline.corpus.citation_label,
                              {src.sid: src.lines for src in prompt.sources}).valid
        if not candidates:
            return None
        similarity = self._line_similarities(question, candidates)
        if similarity is None:
            return candidates[0]
        best = int(similarity.argmax())
        return candidates[best] if float(similarity[best]) >= self.settings.min_quote_similarity else None
