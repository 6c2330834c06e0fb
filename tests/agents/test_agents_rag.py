"""RAG: raw messages stored with AMemGym's prefixes, BM25 or embedding retrieval, query choice."""

import json

import pytest

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.cache import ResponseCache
from memevo.agents.llm.config import LOCAL_EMBEDDING_MODEL, LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.dates import dated
from memevo.agents.rag import RAGAgent
from memevo.agents.registry import build_agent
from memevo.agents.retrieval import BM25Retriever, embedding_source
from memevo.core.errors import UserInputError
from tests.agents.test_agents_support import day, make, reloaded, scripted
from tests.doubles.fault_server import Fault, FaultServer
from tests.doubles.scripted_llm import ScriptedLLM

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
    assert answer.consulted_memory == f"- {dated('USER INPUT: I work as a welder in Gdansk', day(1))}"


async def test_amemgym_compat_retrieves_with_the_whole_prompt():
    agent = await filled(top_k=1, amemgym_compat=True)
    answer = await agent.answer(QUESTION_PROMPT, query=QUESTION, now=day(9))
    # The choices mention dog and beach: the reference's whole-prompt query pulls the wrong memory (I.10).
    assert answer.consulted_memory == "- USER INPUT: My dog Rex loves the beach"


async def test_retrieved_memories_are_listed_oldest_first():
    agent = await filled(top_k=3)
    answer = await agent.answer("x", query="tea welder dog", now=day(9))
    assert answer.consulted_memory.splitlines() == [f"- {dated(f'USER INPUT: {fact}', day(i))}"
                                                    for i, fact in enumerate(FACTS)]


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


class KeywordEmbedder(ScriptedLLM):
    """TEST DOUBLE: a scripted chat client that can also embed, as 3-d bag-of-keywords vectors."""

    KEYS = ("dog", "welder", "tea")

    def __init__(self) -> None:
        super().__init__(scripted(chat="ok").handler)
        self.embedded: list[list[str]] = []

    async def embed(self, texts: list[str], *, role: str, model: str) -> list[list[float]]:
        assert (role, model) == ("agent", "test-embed")
        self.embedded.append(list(texts))
        return [[float(k in text.lower()) + 0.01 for k in self.KEYS] for text in texts]


EMBEDDING_POLICY = MemoryPolicy(
    kind="rag", update_every=2, short_term=0, top_k=1, retrieval="embedding", embedding_model="test-embed"
)


async def test_embedding_retrieval_uses_the_agents_own_llm():
    llm = KeywordEmbedder()
    agent = build_agent(EMBEDDING_POLICY, llm)
    for i, fact in enumerate(FACTS):
        await agent.respond(fact, day(i))
    answer = await agent.answer("q", query="which tea?", now=day(9))
    assert answer.consulted_memory == f"- {dated('USER INPUT: My favourite tea is oolong', day(2))}"
    # Each text is embedded once (embedding happens lazily, at the next search).
    sent = [text for request in llm.embedded for text in request]
    assert len(sent) == len(set(sent))
    assert llm.embedded[-1] == ["which tea?", "USER INPUT: My favourite tea is oolong"]


@pytest.mark.parametrize("kind", ["rag", "awe"])
def test_embedding_retrieval_with_a_chat_only_client_is_a_clear_error(kind):
    policy = EMBEDDING_POLICY.model_copy(update={"kind": kind})
    with pytest.raises(UserInputError, match="can embed texts; ScriptedLLM cannot") as caught:
        build_agent(policy, scripted())
    assert caught.value.field == "retrieval"


async def test_embeddings_go_through_the_gateway_with_cache_and_accounting(tmp_path):
    """Real HTTP: the agent's gateway sends chat and embeddings to its one endpoint, and a second
    agent on the same cache sends nothing at all."""
    vectors = {"dog": [1.0, 0.0, 0.0], "welder": [0.0, 1.0, 0.0], "tea": [0.0, 0.0, 1.0]}

    def embed(text: str) -> list[float]:
        found = [vector for key, vector in vectors.items() if key in text.lower()]
        return found[0] if found else [0.1, 0.1, 0.1]

    with FaultServer(lambda body: "ok", embed=embed) as server:
        server.plan(Fault(status=500))  # the first request (a chat reply) fails once and is retried

        async def run() -> tuple[str, Accounting]:
            accounting, cache = Accounting(), ResponseCache(tmp_path)
            gateway = LLMGateway(
                LLMConfig(model="test-chat", max_retries=2), base_url=server.url,
                cache=cache, accounting=accounting, backoff_base_s=0.001,
            )
            agent = build_agent(EMBEDDING_POLICY, gateway)
            for i, fact in enumerate(FACTS):
                await agent.respond(fact, day(i))
            memory = (await agent.answer("q", query="which tea?", now=day(9))).consulted_memory
            cache.close()  # as the hub does at the end of a run: queued writes are committed
            return memory, accounting

        memory, accounting = await run()
        assert memory == f"- {dated('USER INPUT: My favourite tea is oolong', day(2))}"
        sent = len(server.requests)
        assert server.paths.count("/v1/embeddings") >= 2 and "/v1/chat/completions" in server.paths
        usage = accounting.report().by_role["agent"]
        assert usage.retries == 1 and usage.cache_hits == 0 and usage.prompt_tokens > 0

        again, accounting = await run()
        assert again == memory and len(server.requests) == sent
        usage = accounting.report().by_role["agent"]
        assert usage.calls == usage.cache_hits > 0


def test_embedding_retrieval_needs_a_model_name():
    with pytest.raises(UserInputError, match="embedding_model"):
        build_agent(MemoryPolicy(kind="rag", retrieval="embedding"), scripted())


async def test_bm25_copes_with_memories_without_terms():
    retriever = BM25Retriever()
    assert await retriever.rank("job", ["...", "it is", "!"], 3) == []  # only stop words: no index at all
    assert await retriever.rank("job", ["...", "my job is baking"], 3) == [1]
    assert await retriever.rank("the", ["my job"], 3) == []
    assert await retriever.rank("job", [], 3) == []


def test_on_the_embedded_server_the_embeddings_model_is_its_own_and_a_remote_one_must_be_named():
    policy = MemoryPolicy(kind="rag", retrieval="embedding")
    embedded = LLMGateway(LLMConfig(), base_url="http://127.0.0.1:9/v1", cache=None, accounting=Accounting())
    assert embedding_source(policy, embedded, "rag", field="llm")[1] == LOCAL_EMBEDDING_MODEL
    remote = LLMGateway(LLMConfig(model="gpt-4.1-mini", base_url="https://api.example/v1"),
                        base_url="https://api.example/v1", cache=None, accounting=Accounting())
    with pytest.raises(UserInputError, match="needs embedding_model"):
        embedding_source(policy, remote, "rag", field="llm")
    assert embedding_source(policy.model_copy(update={"embedding_model": "e5"}), remote, "rag", field="llm")[1] == "e5"


async def test_answer_prompts_may_name_today_and_the_defaults_do_not():
    llm = scripted(chat="ok")
    agent = make("rag", llm, update_every=2, short_term=0,
                 prompts={"answer_system_prompt": "Today is {today}.\n{memories}"})
    await agent.respond(FACTS[0], day(0))
    await agent.answer("q", query="dog?", now=day(9))
    assert llm.calls[-1]["messages"][0]["content"].startswith(f"Today is {day(9).date().isoformat()}.\n- ")
    plain = await filled()
    await plain.answer("q", query="dog?", now=day(9))
    assert "{today}" not in plain.llm.calls[-1]["messages"][0]["content"]
