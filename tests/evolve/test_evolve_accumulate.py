"""The accumulate proposer: edits that gained in a race are carried onto the parent; with none, it is reflection."""

import json
from pathlib import Path

from memevo.agents.llm.dspy_lm import GatewayLM
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.awi import MEMORY_TYPES_COMPONENT
from memevo.evolve.candidates import Candidate
from memevo.evolve.proposers import ProposalContext, ProposerSettings, make_proposer
from memevo.evolve.proposers.planner import raced_gains
from memevo.evolve.selection.race import RaceRecord, RaceRound
from memevo.evolve.selection.sequential import Verdict
from memevo.evolve.validation import LengthBounds
from tests.doubles.category_backend import CategoryBackend, category_world

FEEDBACK = "Question 1: Which option should I pick for plan number 2?\n(A) Something for a instrument of piano\n"


def settings(mode: str) -> ProposerSettings:
    backend = CategoryBackend(category_world(1, 1), proposer_mode=mode)
    return ProposerSettings(lm=GatewayLM(backend, role="proposer"))  # type: ignore[arg-type]


def child(parent: Candidate, text: str, generation: int = 1) -> Candidate:
    return Candidate(policy=parent.policy.with_prompts(memory_types=text), parent_id=parent.id,
                     generation=generation, origin="proposal")


def context(parent: Candidate, known: list[Candidate], raced: dict[str, float]) -> ProposalContext:
    return ProposalContext(generation=3, parent=parent, evidence=FEEDBACK, components=[MEMORY_TYPES_COMPONENT],
                           task="task", bounds=LengthBounds(), lineage={c.id: c for c in known}, raced=raced)


SEED = Candidate(policy=MemoryPolicy(kind="awi", prompts={"memory_types": "- commute\n- genre"}))


async def test_two_children_that_gained_are_combined_and_a_loser_is_left_out() -> None:
    gained, also, lost = (child(SEED, "- commute\n- genre\n- plant"), child(SEED, "- commute\n- genre\n- footwear"),
                          child(SEED, "- commute\n- genre\n- beverage"))
    known = [SEED, gained, also, lost]
    variants, _ = await make_proposer("accumulate", settings("garbage")).propose(
        context(SEED, known, {gained.id: 0.1, also.id: 0.05, lost.id: -0.1}), 3)
    assert [v.prompts for v in variants if v.prompts] == [{"memory_types": "- commute\n- genre\n- plant\n- footwear"}]


async def test_a_sibling_edit_is_carried_onto_the_kept_child_removals_too() -> None:
    kept = child(SEED, "- commute\n- genre\n- plant")
    sibling = child(SEED, "- genre\n- footwear")  # removed commute, added footwear
    known = [SEED, kept, sibling]
    (variant,), _ = await make_proposer("accumulate", settings("garbage")).propose(
        context(kept, known, {kept.id: 0.2, sibling.id: 0.04}), 1)
    assert variant.prompts == {"memory_types": "- genre\n- plant\n- footwear"}
    assert variant.proposer == "accumulate"


async def test_after_the_carried_edits_the_next_samples_are_reflection_rewrites() -> None:
    kept = child(SEED, "- commute\n- genre\n- plant")
    sibling = child(SEED, "- commute\n- genre\n- footwear")
    known = [SEED, kept, sibling]
    variants, _ = await make_proposer("accumulate", settings("categories")).propose(
        context(kept, known, {sibling.id: 0.04}), 2)
    assert [v.prompts["memory_types"] for v in variants] == [
        "- commute\n- genre\n- plant\n- footwear", "- commute\n- genre\n- plant\n- instrument"]


async def test_with_no_donor_it_proposes_what_reflection_proposes() -> None:
    lost = child(SEED, "- commute\n- genre\n- beverage")
    ctx = context(SEED, [SEED, lost], {lost.id: -0.05})
    mine, _ = await make_proposer("accumulate", settings("step")).propose(ctx, 3)
    theirs, _ = await make_proposer("reflection", settings("step")).propose(ctx, 3)
    assert [v.prompts for v in mine] == [v.prompts for v in theirs]


def test_the_planner_reads_each_raced_candidate_s_last_gain_from_earlier_generations(tmp_path: Path) -> None:
    def verdict(gain: float) -> Verdict:
        return Verdict(state="open", mean_gain=gain, n=6, p_better=0.5, p_worse=0.5)

    def gen_dir(generation: int) -> Path:
        return tmp_path / f"gen_{generation:03d}"

    first = RaceRecord(parent_id="p", candidate_ids=["a", "b"], users=["u1", "u2", "u3", "u4"], rounds=[
        RaceRound(users=["u1", "u2"], verdicts={"a": verdict(0.1), "b": verdict(-0.2)}, staying=["a"]),
        RaceRound(users=["u1", "u2", "u3", "u4"], verdicts={"a": verdict(0.05)}, staying=[])])
    later = RaceRecord(parent_id="p", candidate_ids=["c"], users=["u1"], rounds=[
        RaceRound(users=["u1"], verdicts={"c": verdict(0.3)}, staying=[])])
    for generation, record in ((1, first), (3, later)):
        gen_dir(generation).mkdir()
        (gen_dir(generation) / "race.json").write_text(json.dumps([json.loads(record.model_dump_json())]))
    assert raced_gains(gen_dir, 3) == {"a": 0.05, "b": -0.2}  # generation 2 has no race; 3 is not before itself
    assert raced_gains(gen_dir, 4) == {"a": 0.05, "b": -0.2, "c": 0.3}
