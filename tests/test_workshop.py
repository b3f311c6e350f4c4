"""Workshop mode: per-learner databases, readiness, and a cleanup that drops only labkit's databases."""
import pytest

import labkit
from labkit import workshop
from labkit.__main__ import main
from labkit.engine import EmbeddedClient


def test_seats_and_prefixes():
    s = workshop.seats(3)
    assert [x.prefix for x in s] == ["sl_learner01_", "sl_learner02_", "sl_learner03_"]
    assert workshop.seats(120)[-1].prefix == "sl_learner120_"


@pytest.mark.parametrize("kwargs", [{"learners": 0}, {"learners": 501}, {"learners": True},
                                    {"learners": 2, "base": "bad.base"}, {"learners": 2, "base": ""}])
def test_bad_seats(kwargs):
    with pytest.raises(ValueError):
        workshop.seats(**kwargs)


def test_prepare_check_cleanup_keeps_user_data(monkeypatch):
    client = EmbeddedClient()
    client["sl_learner02_precious"].notes.insert_one({"keep": True})  # not labkit's
    rows = workshop.prepare(client, 3, seed_db=lambda db: labkit.seed.social(db, users=20, seed=1))
    assert [r["database"] for r in rows] == ["sl_learner01_ready", "sl_learner02_ready", "sl_learner03_ready"]
    assert all(r["documents"] > 20 for r in rows)
    assert all(r["ready"] for r in workshop.check(client, 3))
    # learner 2 works through a lesson with their prefix: lands in their own database
    monkeypatch.setenv("LABKIT_DB_PREFIX", "sl_learner02_")
    lesson = labkit.fresh_db("02_one_to_many", client=client)
    assert lesson.name == "sl_learner02_02_one_to_many"
    lesson.posts.insert_one({"_id": "post:1"})
    result = workshop.cleanup(client)
    assert "sl_learner02_02_one_to_many" in result["dropped"] and len(result["dropped"]) == 4
    assert result["kept"] == ["sl_learner02_precious"]
    assert client["sl_learner02_precious"].notes.count_documents({}) == 1
    assert not any(r["ready"] for r in workshop.check(client, 3))


def test_prepare_refuses_before_writing_anything():
    client = EmbeddedClient()
    client["sl_learner02_ready"].t.insert_one({"mine": 1})
    with pytest.raises(labkit.UnsafeDatabaseError, match="sl_learner02_ready"):
        workshop.prepare(client, 3)
    assert "sl_learner01_ready" not in client.list_database_names()
    assert client["sl_learner02_ready"].t.count_documents({}) == 1


def test_cli_workshop(monkeypatch, capsys):
    from labkit.connection import embedded_client
    monkeypatch.delenv("MONGODB_URI", raising=False)
    assert main(["workshop", "check", "--learners", "2", "--base", "cliws"]) == 1
    assert main(["workshop", "prepare", "--learners", "2", "--base", "cliws", "--users", "0"]) == 0
    assert main(["workshop", "check", "--learners", "2", "--base", "cliws"]) == 0
    assert main(["workshop", "cleanup", "--base", "cliws"]) == 0
    out = capsys.readouterr().out
    assert "LABKIT_DB_PREFIX=cliws01_" in out and "2 of 2 learners ready" in out and "Dropped 2" in out
    assert not [n for n in embedded_client().list_database_names() if n.startswith("cliws")]


def test_cli_workshop_prepare_on_embedded_says_data_vanish(monkeypatch, capsys):
    # issue 17 item 5: the embedded engine dies with the command; prepare must not look like a lasting success.
    monkeypatch.delenv("MONGODB_URI", raising=False)
    assert main(["workshop", "prepare", "--learners", "1", "--base", "vanws", "--users", "0"]) == 0
    out = capsys.readouterr().out
    assert "embedded engine" in out and "gone" in out and "labkit serve" in out
    assert main(["workshop", "cleanup", "--base", "vanws"]) == 0
