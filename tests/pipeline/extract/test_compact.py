"""Rendering a transcript for extraction: compact, inside the budget, users kept, middle cut first."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.extract.compact import MARKER_TOKENS, estimate_tokens, head_tail, render, render_item
from pipeline.transcript import AssistantText, ErrorItem, Item, ToolCall, ToolResult, UserMessage

AT = datetime(2026, 10, 30, 9, 5, tzinfo=UTC)


def test_each_item_renders_compactly() -> None:
    items: list[Item] = [
        UserMessage("Please   fix the test\n\n\n\nthanks  ", AT),
        AssistantText("Looking at it."),
        ToolCall(
            "Bash", "pytest -x tests/login_test.py", '{"command":"pytest -x tests/login_test.py"}', "c1"
        ),
        ToolResult("c1", "1 failed", is_error=False),
        ToolCall("Read", "", '{"file_path":"/a/b.py","limit":10}', "c2"),
        ToolResult("c2", "", is_error=True),
        ErrorItem("API Error: 529 overloaded"),
    ]
    out = render(items, 10_000)
    assert out.text == (
        "[user 2026-10-30 09:05Z]\nPlease   fix the test\n\nthanks\n"
        "[assistant]\nLooking at it.\n"
        "[tool Bash] pytest -x tests/login_test.py\n"
        "[result]\n│ 1 failed\n"
        '[tool Read] {"file_path":"/a/b.py","limit":10}\n'
        "[result error]\n"
        "[error]\n│ API Error: 529 overloaded"
    )
    assert out.items_omitted == 0
    assert out.note == ""
    assert out.tokens == estimate_tokens(out.text)


def test_empty_results_and_messages_are_skipped() -> None:
    assert render_item(ToolResult("c", "   ")) is None
    assert render_item(AssistantText("")) is None
    assert render([], 100).text == ""


def test_long_tool_output_keeps_head_and_tail() -> None:
    lines = [f"line {i}" for i in range(2000)]
    block = render_item(ToolResult("c", "\n".join(lines)))
    assert block is not None
    text = block[1]
    assert "line 0\n" in text
    assert "line 1999" in text
    assert "line 1000\n" not in text
    assert "lines," in text
    assert "omitted ...]" in text
    assert len(text) < 2_400  # 1,600 characters of output, each line quoted


def test_head_tail_leaves_short_text_alone() -> None:
    assert head_tail("short", 100) == "short"
    cut = head_tail("x" * 1000, 300)
    assert cut.startswith("x" * 100)
    assert "[... " in cut
    assert len(cut) < 400


def session(turns: int, *, result_chars: int = 3000) -> list[Item]:
    items: list[Item] = []
    for i in range(turns):
        items += [
            UserMessage(f"user message number {i}"),
            AssistantText(f"assistant answer {i} " + "words " * 40),
            ToolCall("Bash", f"make test-{i}", "{}", f"c{i}"),
            ToolResult(f"c{i}", f"output {i} " + "o" * result_chars),
        ]
    return items


def test_over_budget_cuts_tool_output_from_the_middle_first() -> None:
    items = session(40)
    full = render(items, 10**9)
    out = render(items, full.tokens // 2)
    assert out.tokens <= full.tokens // 2
    assert out.items_omitted > 0
    assert out.user_messages_omitted == 0
    for i in range(40):
        assert f"user message number {i}" in out.text
    # Results from the start and the end survive; the middle ones went first.
    assert "output 0 " in out.text
    assert "output 39 " in out.text
    assert "output 20 " not in out.text
    assert out.text.count("[... 1 item omitted ...]") == out.items_omitted  # each cut result leaves a marker
    assert "omitted from the middle" in out.note


def test_users_go_last_and_only_when_nothing_else_is_left() -> None:
    items = session(30, result_chars=200)
    users_only = render([i for i in items if isinstance(i, UserMessage)], 10**9).tokens
    out = render(items, users_only + 30 * MARKER_TOKENS + 20)  # one marker after each user message
    assert out.user_messages_omitted == 0
    assert out.items_omitted >= 85  # of the 90 others
    assert out.tokens <= users_only + 30 * MARKER_TOKENS + 20
    tiny = render(items, 45)
    assert tiny.user_messages_omitted > 0
    assert "user message number 0" in tiny.text
    assert "user message number 29" in tiny.text


def test_errors_outlast_tool_calls_and_assistant_text() -> None:
    items: list[Item] = [UserMessage("go")]
    for i in range(50):
        items += [AssistantText("a" * 400), ToolCall("Bash", f"cmd {i}", "{}", f"c{i}")]
    items.insert(26, ErrorItem("the build broke: missing libfoo"))
    out = render(items, 200)
    assert "missing libfoo" in out.text
    assert "[user]\ngo" in out.text


def test_a_huge_user_message_is_trimmed_before_users_are_dropped() -> None:
    items: list[Item] = [UserMessage("start " + "p" * 100_000 + " end"), UserMessage("second")]
    out = render(items, 5_000)
    assert out.user_messages_omitted == 0
    assert out.user_messages_trimmed == 1
    assert "start " in out.text
    assert " end" in out.text
    assert "second" in out.text
    assert out.tokens <= 5_000


def _item() -> st.SearchStrategy[Item]:
    text = st.text(alphabet="ab \n", max_size=400)
    return st.one_of(
        st.builds(UserMessage, text),
        st.builds(AssistantText, text),
        st.builds(ToolCall, st.just("Bash"), text, st.just("{}"), st.just("c")),
        st.builds(ToolResult, st.just("c"), text, st.booleans()),
        st.builds(ErrorItem, text),
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(_item(), max_size=60), st.integers(min_value=1, max_value=3_000))
def test_budget_and_user_priority_hold_for_any_session(items: list[Item], budget: int) -> None:
    out = render(items, budget)
    kept_others = any(
        line.startswith(("[assistant]", "[tool ", "[result", "[error]")) for line in out.text.split("\n")
    )
    if out.user_messages_omitted:
        assert not kept_others  # a user message went only after everything else
    if kept_others or out.items_omitted == 0:
        users = [i for i in items if isinstance(i, UserMessage) and i.text.strip()]
        assert out.user_messages_omitted == 0 or not users
    if out.tokens > budget:
        # Over budget only when nothing but (trimmed) user messages and markers remain.
        assert not kept_others
