"""`ragfunnel chat` (api/chat.py): a conversation piped line by line, its commands, its one-line errors."""

from __future__ import annotations

import io

from typer.testing import CliRunner

from ragfunnel.api.chat import ChatSession, run_chat


def test_a_piped_conversation_rewrites_follow_ups_and_answers_commands(friends_client):
    out, err = [], []
    session = ChatSession(friends_client, mode="fast", reader="evidence", k=3)
    lines = io.StringIO("Who did Rachel dump at the altar?\nWhy did she leave him?\n/sources\n/mode bm25\n"
                        "/mode nope\n/reader nope\n/frobnicate\n\nAnd Monica?\n/history\n/reset\n/history\n/quit\n"
                        "Who is never asked?\n")
    asked = run_chat(session, lines, out.append, err.append)
    assert asked == 3 and session.mode == "bm25"
    assert out[1].startswith("(read as: Why did Rachel leave Barry? — rewritten by rules)")
    assert "[1]" in out[1] and "retrieved:" in out[2]  # /sources: the cited lines, then the retrieved scenes
    assert out[3] == "mode: bm25"
    assert [e.split(":")[0] for e in err] == ["error", "error", "error"]  # bad mode, reader, command: one line each
    assert "unknown mode 'nope'" in err[0] and "unknown reader" in err[1] and "unknown command /frobnicate" in err[2]
    assert out[4].startswith("(read as: Why did Monica leave Barry? — rewritten by rules)")
    assert out[5].count("user:") == 3 and out[7] == "(no conversation yet)"


def test_the_chat_command_reads_stdin(small_index):
    from ragfunnel.cli import app

    res = CliRunner().invoke(app, ["chat", "--reader", "evidence", "--index", str(small_index.path)],
                             input="Who was Joey in love with?\nAnd Chandler?\n/quit\n")
    assert res.exit_code == 0, res.output
    assert "(read as: Who was Chandler in love with? — rewritten by rules)" in res.stdout
    res = CliRunner().invoke(app, ["chat", "--mode", "nope", "--index", str(small_index.path)])
    assert res.exit_code != 0


def test_a_first_ask_opens_the_index_without_deadlock(small_index):
    """`Client.answerer` opened the pipeline while holding the lock that `pipeline` takes: a client whose first call
    was `ask` (as `ragfunnel chat`'s is) hung for ever."""
    import threading

    from ragfunnel.api import Client

    client, out = Client(small_index.settings), []
    worker = threading.Thread(target=lambda: out.append(client.ask("Who was Joey in love with?", reader="evidence", k=3)),
                              daemon=True)
    worker.start()
    worker.join(300)
    assert out and out[0].citations
    client.close()
