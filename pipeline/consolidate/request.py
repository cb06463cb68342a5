"""The consolidation prompts, filled, and the commit message of a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from pipeline.checks.guard import prompt_text
from pipeline.consolidate.notes import flags_text, notes_text
from pipeline.consolidate.plan import ScopePlan
from pipeline.gitrepo.repository import RUN_TRAILER
from pipeline.layout import GLOBAL_SCOPE, Caps
from pipeline.llm.pricing import cost_usd
from pipeline.memory.inputs import InputRecord
from pipeline.prompts import Prompt, combined_hash, load_prompt

if TYPE_CHECKING:
    from pipeline.consolidate.context import RunResult
    from pipeline.consolidate.workspace import Workspace

SYSTEM_KEYS = ("summary_token_cap", "topic_max_bytes", "index_max_lines", "index_max_bytes")
USER_KEYS = (
    "mode",
    "scope",
    "scope_description",
    "today",
    "input_count",
    "changes",
    "withdrawn",
    "steered",
    "agent_input",
    "stale",
    "workspace_diff",
)
REPAIR_KEYS = ("findings",)
MAX_LISTED_SESSIONS = 40


@dataclass(frozen=True)
class Prompts:
    system: Prompt
    user: Prompt
    repair: Prompt
    notes: Prompt
    notes_global: Prompt
    flags: Prompt

    @classmethod
    def load(cls) -> Prompts:
        return cls(
            load_prompt("consolidate.system", SYSTEM_KEYS),
            load_prompt("consolidate.user", USER_KEYS),
            load_prompt("consolidate.repair", REPAIR_KEYS),
            load_prompt("consolidate.notes", ("notes",)),
            load_prompt("consolidate.notes.global", ("notes",)),
            load_prompt("consolidate.flags", ("flags",)),
        )

    @property
    def hash(self) -> str:
        return combined_hash(self.system, self.user, self.repair, self.notes, self.notes_global, self.flags)

    def system_text(self, caps: Caps) -> str:
        return self.system.fill(
            summary_token_cap=caps.summary_max_tokens,
            topic_max_bytes=caps.topic_max_bytes,
            index_max_lines=caps.index_max_lines,
            index_max_bytes=caps.index_max_bytes,
        )

    def user_text(
        self, plan: ScopePlan, ws: Workspace, *, today: date, stale: Mapping[str, str] | None = None
    ) -> str:
        return self.user.fill(
            mode=ws.mode,
            scope=plan.scope,
            scope_description=describe_scope(plan),
            today=today.isoformat(),
            input_count=len(plan.inputs),
            changes=changes_text(plan),
            withdrawn=withdrawn_text(ws),
            steered=prompt_text(ws.held),
            agent_input=self.agent_input_text(plan, ws),
            stale=stale_text(stale or {}),
            workspace_diff=ws.diff_text,
        )

    def agent_input_text(self, plan: ScopePlan, ws: Workspace) -> str:
        """The notes and flags agents handed memd for this scope (``memd mcp``); empty without any."""
        parts = []
        if plan.notes:
            prompt = self.notes_global if plan.scope == GLOBAL_SCOPE else self.notes
            parts.append(prompt.fill(notes=notes_text(plan.notes, ws.clean)))
        if plan.flags:
            parts.append(self.flags.fill(flags=flags_text(plan.flags, ws.clean)))
        return "".join(parts)

    def repair_text(self, findings: Sequence[str]) -> str:
        return self.repair.fill(findings="\n".join(f"- {f}" for f in findings))


def describe_scope(plan: ScopePlan) -> str:
    if plan.scope == GLOBAL_SCOPE:
        return (
            "the global scope, which every project reads: it holds only what is about the user (the person, "
            "their preferences, their environment), never anything about a project. Its inputs are the "
            "memories sessions made about the user, without their projects; leave out anything in them "
            "that is about one project"
        )
    return f"the project at {plan.project}" if plan.project else "one project"


def _day(record: InputRecord) -> str:
    at = record.session_last_activity or record.created_at
    return at.date().isoformat()


def _listed(records: Sequence[InputRecord]) -> list[str]:
    lines = [f"  - {r.session_id} ({r.source}, last active {_day(r)}): {r.summary_path}" for r in records]
    if len(lines) > MAX_LISTED_SESSIONS:
        lines = lines[:MAX_LISTED_SESSIONS] + [f"  - ... and {len(lines) - MAX_LISTED_SESSIONS} more"]
    return lines


def changes_text(plan: ScopePlan) -> str:
    added_sessions = {r.session_id for r in plan.added}
    updated = [r for r in plan.added if r.session_id in {x.session_id for x in plan.removed}]
    added = [r for r in plan.added if r not in updated]
    removed = [r for r in plan.removed if r.session_id not in added_sessions]
    lines: list[str] = []
    if added:
        lines += [f"- {len(added)} new session(s):", *_listed(added)]
    if updated:
        lines += [f"- {len(updated)} session(s) extracted again (they grew):", *_listed(updated)]
    if removed:
        lines += [
            f"- {len(removed)} session(s) removed (forgotten, or unused too long): forget what only they supported",
            *[
                f"  - {r.session_id} ({r.source}, last active {_day(r)})"
                for r in removed[:MAX_LISTED_SESSIONS]
            ],
        ]
    return "\n".join(lines) or "- no input changed"


def stale_text(stale: Mapping[str, str]) -> str:
    """The topics published marked stale since the last run (empty when none)."""
    if not stale:
        return ""
    listed = "".join(
        f"  - /memories/{rel}: {why}\n" for rel, why in sorted(stale.items())[:MAX_LISTED_SESSIONS]
    )
    return (
        "\nStale: the code these topics cite (their `cites`) changed or is gone since they were written, so\n"
        "memd publishes them marked stale:\n"
        f"{listed}"
        "Fix or drop each: where the inputs state what is true now, rewrite the topic from them (and its\n"
        "`cites`, or remove the ones that no longer hold); where nothing supports it any more, delete the\n"
        "topic and its line in MEMORY.md. Never keep an old fact only because it was written.\n"
    )


def withdrawn_text(ws: Workspace) -> str:
    """What memd withdrew before this run because of forgotten sessions or memories (empty when nothing)."""
    if not ws.withdrawing:
        if not ws.rebuild_digest:
            return ""
        return (
            "\nA session or a memory this scope drew on was forgotten (here or on another machine) and was\n"
            "withdrawn without a model, leaving memory_summary.md as a placeholder; memd removed it before\n"
            "this run. Write\n"
            "memory_summary.md again from the remaining inputs (raw_memories.md, rollout_summaries/) and the\n"
            "topic files in the folder only.\n"
        )
    sessions = ", ".join(ws.withdrawing[:MAX_LISTED_SESSIONS])
    topics = "".join(f"  - /memories/{rel}\n" for rel in ws.withdrawn) or "  - (no topic file cited them)\n"
    return (
        f"\nForgotten session(s) {sessions}: memd withdrew what they taught before this run. It deleted\n"
        "every topic file that cited them, with its line in MEMORY.md, and memory_summary.md:\n"
        f"{topics}"
        "Rebuild each withdrawn topic the remaining inputs still support, and memory_summary.md, from the\n"
        "remaining inputs (raw_memories.md, rollout_summaries/) and the topic files still in the folder\n"
        "only; a withdrawn topic they do not support stays deleted. Its old text is gone on purpose: do\n"
        "not restore it from anywhere else.\n"
    )


def commit_message(plan: ScopePlan, result: RunResult, *, model: str, sanitized: Sequence[str]) -> str:
    added = sorted({r.session_id for r in plan.added})
    removed = sorted({r.session_id for r in plan.removed} - set(added))
    verb = "forget" if plan.action == "clear" else "consolidate"
    title = f"memd: {verb} {plan.scope} ({result.mode}, {len(added)} new, {len(removed)} removed session(s))"
    lines = [title, "", f"Scope: {plan.scope}"]
    if plan.project:
        lines.append(f"Project: {plan.project}")
    lines.append(f"Sessions consumed: {len(plan.inputs)} input(s)")
    lines += [f"+ {s}" for s in added[:MAX_LISTED_SESSIONS]]
    lines += [f"- {s}" for s in removed[:MAX_LISTED_SESSIONS]]
    if plan.notes:
        lines.append("Notes from agents (MCP): " + ", ".join(f"note-{n.id}" for n in plan.notes))
    if plan.flags:
        lines.append("Flagged by agents (MCP): " + ", ".join(f"{f.file} ({f.verdict})" for f in plan.flags))
    u = result.usage
    if result.turns:
        lines.append(
            f"Usage: {result.turns} turn(s), {u.input_tokens} input + {u.output_tokens} output tokens, "
            f"cache read {u.cache_read_tokens}, cache write {u.cache_write_tokens}, "
            f"est. ${cost_usd(model, u):.4f} ({model})"
        )
    else:
        lines.append("Usage: no model call")
    if result.duplicates_found:
        lines.append(
            f"Duplicates: {result.duplicates_found} found, {result.duplicates_fixed} fixed by the repair turn"
        )
    if result.withdrawn:
        lines.append("Withdrawn for forgotten sessions: " + ", ".join(sorted(result.withdrawn)))
        lines.append("Rebuilt from the remaining inputs: " + (", ".join(sorted(result.rebuilt)) or "none"))
    if result.removed_topics:
        lines.append(
            "Removed by memd: "
            + ", ".join(f"{p} ({why})" for p, why in sorted(result.removed_topics.items()))
        )
    if sanitized:
        lines.append("Not memory, removed: " + ", ".join(sanitized))
    lines += [f"Kept for the person: {line}" for line in result.guarded]
    lines += ["", f"{RUN_TRAILER}: {result.run_id}"]
    return "\n".join(lines) + "\n"
