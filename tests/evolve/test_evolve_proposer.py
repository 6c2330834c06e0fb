"""The DSPy proposer through a gateway-style LM: useful replies parse, bad ones become rejected proposals."""

from dataclasses import replace

from memevo.agents.llm.dspy_lm import GatewayLM
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.awi import MEMORY_TYPES_COMPONENT, WRITE_COMPONENT
from memevo.evolve.candidates import Candidate
from memevo.evolve.proposers import ProposalContext, ProposerSettings, make_proposer
from memevo.evolve.proposers.reflection import ReflectionProposer
from memevo.evolve.validation import LengthBounds
from tests.doubles.category_backend import CategoryBackend, category_world

FEEDBACK = "Question 1: Which option should I pick for plan number 2?\n(A) Something for a instrument of piano\n"


def proposer(mode: str, adapter: str = "chat") -> tuple[ReflectionProposer, CategoryBackend]:
    backend = CategoryBackend(category_world(1, 1), proposer_mode=mode)
    settings = ProposerSettings(lm=GatewayLM(backend, role="proposer"), adapter=adapter)  # type: ignore[arg-type]
    return ReflectionProposer(settings), backend


async def test_types_proposal_adds_categories_from_feedback() -> None:
    prop, backend = proposer("categories")
    (proposal,) = await prop.rewrites(MEMORY_TYPES_COMPONENT, "- commute", FEEDBACK, "task", 1)
    assert proposal.error is None
    assert proposal.text == "- commute\n- instrument"
    assert proposal.changes == ["added a category"]
    assert backend.calls_for("proposer")  # routed through the gateway role


async def test_a_weighted_world_asks_by_weight_and_its_own_categories_are_proposed() -> None:
    world = category_world(1, 2, questions={"commute": 1, "plant": 2})
    assert [q.required_info for q in world[0].qas] == [["commute"], ["plant"], ["plant"]]
    assert set(world[0].periods[1].state) == {"commute", "plant"}
    backend = CategoryBackend(world, proposer_mode="categories")
    settings = ProposerSettings(lm=GatewayLM(backend, role="proposer"))  # type: ignore[arg-type]
    feedback = "Question 2: Which option should I pick for plan number 2?\n(A) Something for a plant of fern\n"
    (proposal,) = await ReflectionProposer(settings).rewrites(MEMORY_TYPES_COMPONENT, "- commute", feedback, "task", 1)
    assert proposal.text == "- commute\n- plant"


async def test_json_adapter_works_too() -> None:
    prop, _ = proposer("categories", adapter="json")
    (proposal,) = await prop.rewrites(MEMORY_TYPES_COMPONENT, "- commute", FEEDBACK, "task", 1)
    assert proposal.text == "- commute\n- instrument"


async def test_whole_prompt_signature_is_used_for_components_with_placeholders() -> None:
    prop, backend = proposer("categories")
    (proposal,) = await prop.rewrites(WRITE_COMPONENT, WRITE_COMPONENT.default, FEEDBACK, "task", 1)
    assert proposal.text is not None and proposal.text.endswith("- instrument")
    assert "new_text" in backend.calls_for("proposer")[0]["messages"][0]["content"]


async def test_unparsable_reply_is_an_error_not_an_exception() -> None:
    prop, _ = proposer("garbage")
    proposals = await prop.rewrites(MEMORY_TYPES_COMPONENT, "- commute", FEEDBACK, "task", 3)
    assert len(proposals) == 3
    assert all(p.text is None and p.error for p in proposals)


async def test_proposals_asked_for_again_are_new_samples_not_the_first_answer_repeated() -> None:
    backend = CategoryBackend(category_world(1, 1), proposer_mode="mixed")  # sample 0 adds a category, others forget
    settings = ProposerSettings(lm=GatewayLM(backend, role="proposer"))  # type: ignore[arg-type]
    parent = Candidate(policy=MemoryPolicy(kind="awi", prompts={"memory_types": "- commute (how the user travels)"}))
    context = ProposalContext(generation=1, parent=parent, evidence=FEEDBACK, components=[MEMORY_TYPES_COMPONENT],
                              task="task", bounds=LengthBounds())
    for name in ("reflection", "delta"):
        (first,), _ = await make_proposer(name, settings).propose(context, 1)
        (again,), _ = await make_proposer(name, settings).propose(replace(context, first_sample=1), 1)
        assert first.prompts == {"memory_types": "- commute (how the user travels)\n- instrument"}, name
        assert again.prompts != first.prompts, name
