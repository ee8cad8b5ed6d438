"""The answer end of the funnel: prompt the LLM with the retrieved scenes, keep only verified citations."""

from ragfunnel.generate.answer import AnswerResult, Answerer, AnswerSettings, RetrievedScene
from ragfunnel.generate.citations import REFUSAL, CheckedCitation, is_refusal, parse_answer, validate
from ragfunnel.generate.llm import LLM, FakeLLM, LLMError, make_llm
from ragfunnel.generate.prompt import Prompt, SceneInput, Source, build_prompt

__all__ = [
    "REFUSAL", "LLM", "LLMError", "AnswerResult", "Answerer", "AnswerSettings", "CheckedCitation", "FakeLLM", "Prompt",
    "RetrievedScene", "SceneInput", "Source", "build_prompt", "is_refusal", "make_llm", "parse_answer", "validate",
]
