"""Ranking: words first, then scope, recency and use; superseded topics never; abstention."""

from __future__ import annotations

from datetime import date

from pipeline.search.corpus import Topic
from pipeline.search.rank import Index, visible
from pipeline.search.supersede import superseded

TODAY = date(2026, 11, 15)
OWN = "projects/app-12345678"
OTHER = "projects/other-87654321"


def topic(
    scope: str,
    file: str,
    name: str,
    body: str,
    *,
    updated: date | None = date(2026, 10, 1),
    expires: date | None = None,
    description: str = "",
    evidence: str = "",
) -> Topic:
    return Topic(scope, file, name, description, "project", body, None, updated, expires, (), evidence)


def ids(index: Index, query: str, own: str | None = OWN, **kw: object) -> list[str]:
    return [h.topic.id for h in index.search(query, own_scope=own, **kw)]  # type: ignore[arg-type]


def test_this_project_comes_before_global_and_another_project_is_never_offered() -> None:
    body = "Run the release with make release and check the changelog."
    index = Index(
        [
            topic(OTHER, "r.md", "Release", body),
            topic("global", "r.md", "Release", body),
            topic(OWN, "r.md", "Release", body),
        ],
        today=TODAY,
    )
    assert ids(index, "release changelog") == [f"{OWN}/r.md", "global/r.md"]
    assert ids(index, "release changelog", scopes={"global"}) == ["global/r.md"]
    assert ids(index, "release changelog", scopes={OTHER}) == []
    assert ids(index, "release changelog", own=None) == ["global/r.md"]
    assert [t.scope for t in visible(index.topics, OWN)] == ["global", OWN]


def test_recency_and_use_break_a_tie_of_words() -> None:
    body = "Cache keys are prefixed with the tenant."
    old = topic(OWN, "a.md", "Alpha", body, updated=date(2024, 1, 1))
    new = topic(OWN, "b.md", "Beta", body, updated=date(2026, 11, 1))
    assert ids(Index([old, new], today=TODAY), "cache keys prefixed") == [f"{OWN}/b.md", f"{OWN}/a.md"]
    same_day = topic(OWN, "a.md", "Alpha", body, updated=date(2026, 11, 1))
    index = Index([same_day, new], today=TODAY)
    assert ids(index, "cache keys prefixed", uses={f"{OWN}/b.md": 3})[0] == f"{OWN}/b.md"
    assert ids(index, "cache keys prefixed", uses={f"{OWN}/a.md": 3})[0] == f"{OWN}/a.md"


def test_a_topic_resting_on_tool_output_ranks_under_an_equal_one_never_under_a_poorer_one() -> None:
    body = "Cache keys are prefixed with the tenant."
    tool = topic(
        OWN, "a.md", "Alpha", body, evidence="tool"
    )  # its id sorts first: only evidence puts it second
    user = topic(OWN, "b.md", "Beta", body, evidence="user")
    unmarked = topic(OWN, "c.md", "Gamma", body)
    index = Index([tool, user, unmarked], today=TODAY)
    assert ids(index, "cache keys prefixed") == [f"{OWN}/b.md", f"{OWN}/c.md", f"{OWN}/a.md"]
    better = topic(
        OWN, "d.md", "Cache keys", "Cache keys are prefixed with the tenant and hashed.", evidence="tool"
    )
    assert ids(Index([better, user], today=TODAY), "cache keys hashed")[0] == f"{OWN}/d.md"
    elsewhere = topic("global", "b.md", "Beta", body)
    assert ids(Index([tool, elsewhere], today=TODAY), "cache keys prefixed") == [f"{OWN}/a.md", "global/b.md"]


def test_an_expired_topic_and_an_older_near_duplicate_are_never_offered() -> None:
    new = topic(OWN, "deploy.md", "Deploying", "Deploy with make release to fly.", updated=date(2026, 10, 1))
    old = topic(
        OWN,
        "deploy-old.md",
        "Deploying (old)",
        "Deploy with make deploy to heroku.",
        updated=date(2025, 1, 1),
    )
    gone = topic(OWN, "standup.md", "Standup", "Standup at 9:30.", expires=date(2025, 12, 31))
    assert superseded([new, old, gone], TODAY) == {f"{OWN}/deploy-old.md", f"{OWN}/standup.md"}
    index = Index([new, old, gone], today=TODAY)
    assert ids(index, "deploy") == [f"{OWN}/deploy.md"]
    assert ids(index, "standup") == []


def test_a_general_topic_and_a_narrower_one_are_not_twins() -> None:
    general = topic(
        OWN,
        "database.md",
        "Database",
        "The database is Postgres 16; migrations run on deploy.",
        updated=date(2025, 1, 1),
    )
    narrow = topic(
        OWN,
        "database-migrations.md",
        "Database migrations",
        "Migrations of the Postgres database run on deploy.",
    )
    assert superseded([general, narrow], TODAY) == set()


def test_a_query_sharing_one_word_with_the_memory_gets_an_empty_list() -> None:
    index = Index(
        [topic(OWN, "redis.md", "Redis cache", "The cache is Redis through django-redis.")], today=TODAY
    )
    assert ids(index, "redis cache") == [f"{OWN}/redis.md"]
    assert ids(index, "redis cluster failover procedure") == []
    assert ids(index, "the of and") == []


def test_a_wordy_question_finds_what_it_asks_and_one_shared_word_still_gets_nothing() -> None:
    """Question words, filler and words no topic holds do not count against a query; a topic that
    matches one word of a query asking several is still not offered."""
    migrations = topic(
        OWN,
        "database-migrations.md",
        "Database migrations",
        "Run makemigrations then migrate. Squash old ones with squashmigrations.",
        description="Django migrations: how to create, apply and squash them",
    )
    tests = topic(OWN, "tests.md", "Running the tests", "Run the tests with pytest --reuse-db.")
    schema = topic(OWN, "schema.md", "Schema changes", "Avro schemas live in schemas/.")
    index = Index([migrations, tests, schema], today=TODAY)
    for query in (
        "what database migrations tool does the project use",
        "can you remind me how squashing migrations works in this project",
        "I need the details on database migrations please",
    ):
        assert ids(index, query)[:1] == [f"{OWN}/database-migrations.md"], query
    assert ids(index, "how do I run the test suite locally please")[:1] == [f"{OWN}/tests.md"]
    for query in (
        "graphql schema stitching",
        "can you remind me how graphql schema stitching works in this project",
        "what do we know about pytest fixtures for kafka",
        "please",
    ):
        assert ids(index, query) == [], query


def test_limit_caps_the_results() -> None:
    index = Index(
        [topic(OWN, f"t{i}.md", f"Topic {i} about builds", "builds") for i in range(30)], today=TODAY
    )
    assert len(ids(index, "builds", limit=3)) == 3


def test_a_snippet_of_a_long_line_shows_where_it_matches() -> None:
    line = "filler " * 80 + "the webhook secret is verified first " + "tail " * 80
    index = Index([topic(OWN, "w.md", "Webhooks", line)], today=TODAY)
    [hit] = index.search("webhook secret verified", own_scope=OWN)
    assert "webhook secret is verified" in hit.snippet
    assert hit.snippet.startswith("…")
    assert len(hit.snippet) <= 240
