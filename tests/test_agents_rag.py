"""RAG: raw messages stored with AMemGym's prefixes, BM25 or embedding retrieval, query choice."""

import json
from types import SimpleNamespace

import pytest

from memevo.agents.errors import UserInputError
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import build_agent
from memevo.agents.rag import RAGAgent
from memevo.agents.retrieval import BM25Retriever
from tests.test_agents_support import day, make, reloaded, scripted

FACTS = ["My dog Rex loves the beach", "I work as a welder in Gdansk", "My favourite tea is oolong"]
QUESTION = "where do I work?"
QUESTION_PROMPT = f"Answer with a number.\nQuestion: {QUESTION}\n(1) walking Rex the dog (2) beach dog cafe (3) Rex's beach shop"


async def filled(**fields) -> RAGAgent:
    agent = make("rag", scripted(chat="ok"), update_every=2, short_term=0, **fields)
    for i, fact in enumerate(FACTS):
        await agent.respond(fact, day(i))
    return agent


async def test_every_message_is_stored_verbatim_with_prefix():
    agent = await filled()
    texts = [m.text for m in agent.store.all()]
    assert texts[0] == "USER INPUT: My dog Rex loves the beach" and texts[1] == "ASSISTANT RESPONSE: ok"
    assert len(texts) == 6


async def test_top_k_bm25_retrieval_by_bare_question():
    agent = await filled(top_k=1)
    answer = await agent.answer(QUESTION_PROMPT, query=QUESTION, now=day(9))
    assert answer.consulted_memory == "- USER INPUT: I work as a welder in Gdansk"


async def test_amemgym_compat_retrieves_with_the_whole_prompt():
    agent = await filled(top_k=1, amemgym_compat=True)
    answer = await agent.answer(QUESTION_PROMPT, query=QUESTION, now=day(9))
    # The choices mention dog and beach: the reference's whole-prompt query pulls the wrong memory (I.10).
    assert answer.consulted_memory == "- USER INPUT: My dog Rex loves the beach"


async def test_retrieved_memories_are_listed_oldest_first():
    agent = await filled(top_k=3)
    answer = await agent.answer("x", query="tea welder dog", now=day(9))
    assert answer.consulted_memory.splitlines() == [f"- USER INPUT: {fact}" for fact in FACTS]


async def test_answer_is_pure_and_state_round_trips():
    agent = await filled()
    before = json.dumps(agent.state())
    await agent.answer("q", query="dog", now=day(9))
    assert json.dumps(agent.state()) == before
    twin = reloaded(agent, scripted(chat="ok"))
    assert twin.state() == agent.state()
    for each in (agent, twin):
        await each.respond("Rex is now 5", day(10))
    assert twin.state() == agent.state()
    assert (await twin.answer("q", query="Rex", now=day(11))) == (await agent.answer("q", query="Rex", now=day(11)))


class FakeEmbeddings:
    """TEST DOUBLE for ``AsyncOpenAI().embeddings``: 3-d bag-of-keywords vectors."""

    KEYS = ("dog", "welder", "tea")

    def __init__(self) -> None:
        self.requests: list[list[str]] = []

    async def create(self, *, model: str, input: list[str]):
        assert model == "test-embed"
        self.requests.append(list(input))
        vectors = [[float(k in text.lower()) + 0.01 for k in self.KEYS] for text in input]
        return SimpleNamespace(data=[SimpleNamespace(embedding=v) for v in vectors])


async def test_embedding_retrieval_through_an_openai_compatible_client():
    embeddings = FakeEmbeddings()
    policy = MemoryPolicy(kind="rag", update_every=2, short_term=0, top_k=1, retrieval="embedding", embedding_model="test-embed")
    agent = RAGAgent(policy, scripted(chat="ok"), embeddings=SimpleNamespace(embeddings=embeddings))
    for i, fact in enumerate(FACTS):
        await agent.respond(fact, day(i))
    answer = await agent.answer("q", query="which tea?", now=day(9))
    assert answer.consulted_memory == "- USER INPUT: My favourite tea is oolong"
    # Each text is embedded once and cached (embedding happens lazily, at the next search).
    sent = [text for request in embeddings.requests for text in request]
    assert len(sent) == len(set(sent))
    assert embeddings.requests[-1] == ["which tea?", "USER INPUT: My favourite tea is oolong"]


def test_embedding_retrieval_needs_a_model_name():
    with pytest.raises(UserInputError, match="embedding_model"):
        build_agent(MemoryPolicy(kind="rag", retrieval="embedding"), scripted())


async def test_bm25_copes_with_memories_without_terms():
    retriever = BM25Retriever()
    assert await retriever.rank("job", ["...", "it is", "!"], 3) == []  # only stop words: no index at all
    assert await retriever.rank("job", ["...", "my job is baking"], 3) == [1]
    assert await retriever.rank("the", ["my job"], 3) == []
    assert await retriever.rank("job", [], 3) == []
