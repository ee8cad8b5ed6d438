"""Follow-up rewriting (api/conversation.py): rules without an LLM, the LLM's rewrite checked, fallbacks."""

from __future__ import annotations

import pytest

from ragfunnel.api.conversation import gender, llm_rewrite, rewrite, rule_rewrite
from ragfunnel.errors import QueryError

ALTAR = [{"role": "user", "content": "Who did Rachel dump at the altar?"}, {"role": "assistant", "content": "Barry [1]"}]


def test_pronouns_take_the_last_name_of_their_gender():
    assert rule_rewrite("Why did she leave him?", ALTAR) == "Why did Rachel leave Barry?"
    assert rule_rewrite("Where did she go after that?", ALTAR) == "Where did Rachel go after that?"
    assert rule_rewrite("What did her father say?", ALTAR) == "What did Rachel's father say?"
    # a later pronoun of the same person stays as it is
    assert rule_rewrite("How does he separate his socks?", [("user", "Who is Richard?")]) == "How does Richard separate his socks?"


def test_an_elliptical_follow_up_takes_the_previous_question_with_the_new_name():
    assert rule_rewrite("And Monica?", [("user", "Where did Rachel work?"), ("assistant", "Central Perk")]) == "Where did Monica work?"
    assert rule_rewrite("What about Ross?", [("user", "Who was Joey in love with?")]) == "Who was Ross in love with?"
    assert rule_rewrite("And in season 2?", [("user", "Where did Rachel work?")]) == "Where did Rachel work in season 2?"


def test_rewrites_chain_through_the_conversation():
    history = [("user", "Where did Rachel work?"), ("assistant", "Central Perk"), ("user", "And Monica?"),
               ("assistant", "At a restaurant")]
    assert rule_rewrite("Why did she quit?", history) == "Why did Monica quit?"


def test_they_names_the_previous_questions_people_and_names_are_carried_as_a_last_resort():
    assert rule_rewrite("Why did they break up?", [("user", "Why were Ross and Rachel on a break?")]) == \
        "Why did Ross and Rachel break up?"
    assert rule_rewrite("What happened there?", ALTAR) == "What happened there? (Rachel, Barry)"


def test_a_question_that_stands_alone_is_unchanged():
    assert rule_rewrite("Who is Monica's brother?", ALTAR) == "Who is Monica's brother?"
    assert rule_rewrite("Why did she leave him?", None) == "Why did she leave him?"
    assert rewrite("Who is Monica's brother?", ALTAR).method == "none"
    found = rewrite("Why did she leave him?", ALTAR)
    assert (found.method, found.changed, found.standalone) == ("rules", True, "Why did Rachel leave Barry?")
    assert gender("Rachel Green") == "f" and gender("Chandler") == "m" and gender("Zorblax") is None


def test_a_bad_history_is_a_query_error():
    with pytest.raises(QueryError, match="history must be a list"):
        rule_rewrite("Why?", "hello")
    with pytest.raises(QueryError, match="role must be"):
        rule_rewrite("Why?", [{"role": "robot", "content": "x"}])


class ScriptedLLM:
    name = "scripted"

    def __init__(self, reply: str | Exception):
        self.reply, self.prompts = reply, []

    def stream(self, system, user, max_tokens):
        self.prompts.append(user)
        if isinstance(self.reply, Exception):
            raise self.reply
        yield self.reply


def test_the_llm_rewrite_is_used_when_it_keeps_the_follow_ups_names():
    llm = ScriptedLLM("Why did Rachel leave Barry at the altar?\nextra line")
    found = llm_rewrite(llm, "Why did she leave him?", ALTAR)
    assert (found.method, found.standalone) == ("llm", "Why did Rachel leave Barry at the altar?")
    assert "User: Who did Rachel dump at the altar?" in llm.prompts[0] and "[1]" not in llm.prompts[0]
    assert rewrite("Who is Monica's brother?", ALTAR, llm).method == "none"  # stands alone: no LLM call
    assert len(llm.prompts) == 1


@pytest.mark.parametrize("reply", ["", "x" * 400, "Why did Rachel leave Barry?", RuntimeError("down"),
                                   "I don't know based on the provided scenes.", "Monica saw Rachel."])
def test_a_bad_llm_rewrite_falls_back_to_the_rules(reply):
    # empty, far too long, dropping the follow-up's own name (Monica), an LLM failure, a refusal, not a question
    found = llm_rewrite(ScriptedLLM(reply), "Did Monica see her?", ALTAR)
    assert (found.method, found.standalone) == ("rules", "Did Monica see Rachel?")
